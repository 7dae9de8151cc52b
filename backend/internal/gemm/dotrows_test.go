package gemm

import (
	"math"
	"math/rand"
	"testing"
)

// TestSdotRows checks SdotRows against a float64 sum for overlapping rows
// of b (a convolution's shifted windows) and edge blocks, and that a row
// outside b panics.
func TestSdotRows(t *testing.T) {
	if !Accelerated() {
		t.Skip("no micro-kernel on this CPU: SdotRows declines")
	}
	cases := []struct {
		name    string
		m, n, k int
		stride  int // offset between consecutive rows of b (< k: overlap)
	}{
		{"overlap", 10, 81, 1000, 1},
		{"edges", 7, 9, 50, 3},
		{"one", 1, 1, 1, 1},
		{"disjoint", 4, 5, 17, 20},
	}
	r := rand.New(rand.NewSource(11))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lda, ldc := c.k+3, c.n+2
			a := make([]float32, (c.m-1)*lda+c.k)
			b := make([]float32, (c.n-1)*c.stride+c.k)
			cc := make([]float32, (c.m-1)*ldc+c.n)
			for _, s := range [][]float32{a, b, cc} {
				for i := range s {
					s[i] = float32(r.NormFloat64())
				}
			}
			boff := make([]int, c.n)
			for j := range boff {
				boff[j] = j * c.stride
			}
			c0 := append([]float32{}, cc...)
			if !SdotRows(c.m, c.n, c.k, a, lda, b, boff, cc, ldc) {
				t.Fatal("SdotRows declined")
			}
			checkDotBlock(t, c.m, c.n, ldc, c0, cc, func(i, j int) (s, abs float64) {
				for l := 0; l < c.k; l++ {
					p := float64(a[i*lda+l]) * float64(b[boff[j]+l])
					s, abs = s+p, abs+math.Abs(p)
				}
				return s, abs
			})
		})
	}
	t.Run("row outside b", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("no panic for a row of b past its end")
			}
		}()
		SdotRows(1, 2, 4, make([]float32, 4), 4, make([]float32, 6), []int{0, 3}, make([]float32, 2), 2)
	})
}

// checkDotBlock checks the m×n block of cc (leading dimension ldc) against
// c0 plus the float64 dot products dot(i, j) returns, within 1e-6 of the
// sum of the products' magnitudes (also from dot), and that cc outside the
// block is c0's.
func checkDotBlock(t *testing.T, m, n, ldc int, c0, cc []float32, dot func(i, j int) (s, abs float64)) {
	t.Helper()
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			p, pabs := dot(i, j)
			s, abs := float64(c0[i*ldc+j])+p, math.Abs(float64(c0[i*ldc+j]))+pabs
			if d := math.Abs(float64(cc[i*ldc+j]) - s); d > 1e-6*abs {
				t.Fatalf("c[%d,%d] = %v, float64 sum %v (|err| %g > 1e-6·%g)", i, j, cc[i*ldc+j], s, d, abs)
			}
		}
	}
	for i := range cc {
		if i%ldc >= n && cc[i] != c0[i] {
			t.Fatalf("c[%d] outside the m×n block changed", i)
		}
	}
}
