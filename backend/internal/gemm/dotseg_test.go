package gemm

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestSdotRowsSeg checks SdotRowsSeg against a float64 sum over the same
// segments: a convolution's shapes (LeNet's weight gradients: 28 and 10
// values a row, 28 and 10 rows, one sample and several), segment lengths
// below, at and across a vector of 16 values, edge blocks of rows and
// columns, one segment, items that overlap their neighbours' rows; that c
// outside the m×n block is kept; and that a segment outside a or b
// panics; with every micro-kernel this CPU runs.
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
		m, n, k, nseg, items int
		taps, w              int // b: runs of taps consecutive offsets, rows of w values
	}{
		{10, 81, 28, 28, 1, 9, 36},
		{20, 250, 10, 10, 1, 5, 14},
		{20, 250, 10, 10, 5, 5, 14},
		{10, 81, 28, 28, 2, 9, 36},
		{3, 4, 16, 2, 3, 2, 16},
		{7, 9, 17, 3, 4, 3, 20},
		{1, 1, 1, 1, 1, 1, 1},
		{1, 1, 1, 1, 7, 1, 1},
		{5, 6, 33, 4, 2, 2, 40},
		{4, 13, 5, 1, 6, 3, 7},
	}
	r := rand.New(rand.NewSource(3))
	for _, c := range cases {
		t.Run(fmt.Sprintf("%dx%d k=%d nseg=%d items=%d", c.m, c.n, c.k, c.nseg, c.items), func(t *testing.T) {
			sa, lda := c.k+1, (c.k+1)*c.nseg+2
			boff := make([]int, c.n)
			for j := range boff {
				boff[j] = (j/c.taps)*c.w + j%c.taps
			}
			// Items lie ia and ib apart: a's past its rows (as a batch's
			// samples of gy), b's less than a row of offsets (samples
			// sharing planes, which the sums must not mind).
			ia, ib := (c.m-1)*lda+(c.nseg-1)*sa+c.k+5, boff[c.n-1]/2+3
			l := Segs{K: c.k, N: c.nseg, Items: c.items, SA: sa, SB: c.w, IA: ia, IB: ib}
			ldc := c.n + 3
			a := make([]float32, (c.m-1)*lda+(c.items-1)*ia+(c.nseg-1)*sa+c.k)
			b := make([]float32, boff[c.n-1]+(c.items-1)*ib+(c.nseg-1)*c.w+c.k)
			cc := make([]float32, (c.m-1)*ldc+c.n)
			for _, s := range [][]float32{a, b, cc} {
				for i := range s {
					s[i] = float32(r.NormFloat64())
				}
			}
			c0 := append([]float32{}, cc...)
			if !SdotRowsSeg(c.m, c.n, l, a, lda, b, boff, cc, ldc) {
				t.Fatal("SdotRowsSeg declined")
			}
			checkDotBlock(t, c.m, c.n, ldc, c0, cc, func(i, j int) (s, abs float64) {
				for it := 0; it < c.items; it++ {
					for q := 0; q < c.nseg; q++ {
						for v := 0; v < c.k; v++ {
							p := float64(a[i*lda+it*ia+q*sa+v]) * float64(b[boff[j]+it*ib+q*c.w+v])
							s, abs = s+p, abs+math.Abs(p)
						}
					}
				}
				return s, abs
			})
		})
	}
	for _, p := range []struct {
		name string
		l    Segs
		a, b int
	}{
		{"segment outside b", Segs{K: 4, N: 2, SA: 4, SB: 6}, 8, 9},
		{"item outside b", Segs{K: 4, N: 2, Items: 2, SA: 4, SB: 6, IA: 8, IB: 10}, 16, 19},
		{"item outside a", Segs{K: 4, N: 2, Items: 2, SA: 4, SB: 6, IA: 8, IB: 10}, 15, 20},
	} {
		t.Run(p.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("no panic for %+v with len(a) = %d, len(b) = %d", p.l, p.a, p.b)
				}
			}()
			SdotRowsSeg(1, 1, p.l, make([]float32, p.a), 8, make([]float32, p.b), []int{0}, make([]float32, 1), 1)
		})
	}
}
