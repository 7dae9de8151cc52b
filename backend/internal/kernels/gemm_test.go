package kernels

import (
	"math"
	"math/rand"
	"testing"
)

// TestGemmSerial compares gemmSerial with gonum's gemm on random operands
// (NN, TN, NT; beta 0 and 1; strided leading dimensions; sizes across the
// column tile).
func TestGemmSerial(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	rnd := func(n int) []float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = rng.NormFloat64()
		}
		return d
	}
	for _, c := range []struct{ m, n, k int }{{1, 1, 1}, {3, 5, 7}, {10, 784, 81}, {4, gemmTile + 37, 9}, {20, 250, 3}, {64, 4, 576}, {576, 4, 64}, {64, 576, 4}, {8, 16, 72}, {72, 16, 8}, {30, 2, 5}} {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}} {
			for _, beta := range []float64{0, 1} {
				lda, ldb, ldc := c.k+2, c.n+1, c.n+3
				ar, br := c.m, c.k
				if tr[0] {
					lda, ar = c.m+2, c.k
				}
				if tr[1] {
					ldb, br = c.k+1, c.n
				}
				a, b, c0 := rnd(ar*lda), rnd(br*ldb), rnd(c.m*ldc)
				want := append([]float64{}, c0...)
				got := append([]float64{}, c0...)
				gemm(tr[0], tr[1], c.m, c.n, c.k, a, lda, b, ldb, beta, want, ldc)
				gemmSerial(tr[0], tr[1], c.m, c.n, c.k, a, lda, b, ldb, beta, got, ldc)
				for i := range want {
					if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i]))*float64(c.k) {
						t.Fatalf("%v trans %v beta %v: c[%d] = %v, gonum %v", c, tr, beta, i, got[i], want[i])
					}
				}
				got32 := make([]float32, len(c0))
				for i, v := range c0 {
					got32[i] = float32(v)
				}
				gemmSerial(tr[0], tr[1], c.m, c.n, c.k, f32s(a), lda, f32s(b), ldb, float32(beta), got32, ldc)
				for i := range want {
					if math.Abs(float64(got32[i])-want[i]) > 1e-5*(1+math.Abs(want[i]))*float64(c.k) {
						t.Fatalf("float32 %v trans %v beta %v: c[%d] = %v, gonum float64 %v", c, tr, beta, i, got32[i], want[i])
					}
				}
			}
		}
	}
}

func f32s(d []float64) []float32 {
	out := make([]float32, len(d))
	for i, v := range d {
		out[i] = float32(v)
	}
	return out
}
