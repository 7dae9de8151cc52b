package gemm

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestSdotRowsSeg checks SdotRowsSeg against a float64 sum over the same
// segments: a convolution's shapes (LeNet's weight gradients: 28 and 10
// values a row, 28 and 10 rows), segment lengths below, at and across a
// vector of 16 values, edge blocks of rows and columns, one segment; that
// c outside the m×n block is kept; and that a segment outside b panics;
// with every micro-kernel this CPU runs.
func TestSdotRowsSeg(t *testing.T) {
	if !Accelerated() || len(kernels()) == 0 {
		t.Skip("no micro-kernel on this CPU: SdotRowsSeg declines")
	}
	for _, kr := range kernels() {
		t.Run(kr.name, func(t *testing.T) {
			defer func(k *kernel) { active = k }(active)
			active = kr
			testSdotRowsSeg(t)
		})
	}
}

func testSdotRowsSeg(t *testing.T) {
	cases := []struct {
		m, n, k, nseg int
		taps, w       int // b: runs of taps consecutive offsets, rows of w values
	}{
		{10, 81, 28, 28, 9, 36},
		{20, 250, 10, 10, 5, 14},
		{3, 4, 16, 2, 2, 16},
		{7, 9, 17, 3, 3, 20},
		{1, 1, 1, 1, 1, 1},
		{5, 6, 33, 4, 2, 40},
		{4, 13, 5, 1, 3, 7},
	}
	r := rand.New(rand.NewSource(3))
	for _, c := range cases {
		t.Run(fmt.Sprintf("%dx%d k=%d nseg=%d", c.m, c.n, c.k, c.nseg), func(t *testing.T) {
			sa, lda := c.k+1, (c.k+1)*c.nseg+2
			boff := make([]int, c.n)
			for j := range boff {
				boff[j] = (j/c.taps)*c.w + j%c.taps
			}
			ldc := c.n + 3
			a := make([]float32, (c.m-1)*lda+(c.nseg-1)*sa+c.k)
			b := make([]float32, boff[c.n-1]+(c.nseg-1)*c.w+c.k)
			cc := make([]float32, (c.m-1)*ldc+c.n)
			for _, s := range [][]float32{a, b, cc} {
				for i := range s {
					s[i] = float32(r.NormFloat64())
				}
			}
			c0 := append([]float32{}, cc...)
			if !SdotRowsSeg(c.m, c.n, c.k, c.nseg, a, lda, sa, b, boff, c.w, cc, ldc) {
				t.Fatal("SdotRowsSeg declined")
			}
			checkDotBlock(t, c.m, c.n, ldc, c0, cc, func(i, j int) (s, abs float64) {
				for q := 0; q < c.nseg; q++ {
					for l := 0; l < c.k; l++ {
						p := float64(a[i*lda+q*sa+l]) * float64(b[boff[j]+q*c.w+l])
						s, abs = s+p, abs+math.Abs(p)
					}
				}
				return s, abs
			})
		})
	}
	t.Run("segment outside b", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("no panic for a segment of b past its end")
			}
		}()
		SdotRowsSeg(1, 1, 4, 2, make([]float32, 8), 8, 4, make([]float32, 9), []int{0}, 6, make([]float32, 1), 1)
	})
}
