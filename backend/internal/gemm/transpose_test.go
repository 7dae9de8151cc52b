package gemm

import (
	"fmt"
	"math"
	"testing"
)

// TestTransposeRows checks TransposeRows against a plain loop on bands
// with and without whole 8×8 blocks, column tails, padded strides, −0,
// infinities and NaNs (bit for bit, −0 to +0 only under plusZero), and
// that nothing outside the band's columns of dst is written.
func TestTransposeRows(t *testing.T) {
	if !CanTransposeRows() {
		t.Skip("no AVX2: TransposeRows is never called on this CPU")
	}
	cases := []struct{ rows, cols, lds, ldd, r0, r1 int }{
		{8, 8, 8, 8, 0, 8},
		{16, 24, 24, 16, 0, 16},
		{13, 21, 21, 13, 0, 13},
		{13, 21, 21, 13, 8, 13},
		{20, 9, 11, 23, 3, 19},
		{9, 8, 8, 9, 0, 9},
		{7, 30, 30, 7, 0, 7},
		{96, 256, 256, 96, 40, 48},
		{64, 7, 7, 64, 0, 64},
	}
	for _, c := range cases {
		for _, pz := range []bool{false, true} {
			t.Run(fmt.Sprintf("%dx%d/rows%d-%d/plusZero=%v", c.rows, c.cols, c.r0, c.r1, pz), func(t *testing.T) {
				src := make([]float32, (c.rows-1)*c.lds+c.cols)
				for i := range src {
					switch i % 11 {
					case 3:
						src[i] = float32(math.Copysign(0, -1))
					case 5:
						src[i] = float32(math.Inf(-1))
					case 7:
						src[i] = float32(math.NaN())
					default:
						src[i] = float32(i)*0.25 - 7
					}
				}
				const sentinel = 12345.5
				got := make([]float32, (c.cols-1)*c.ldd+c.rows)
				want := make([]float32, len(got))
				for i := range got {
					got[i], want[i] = sentinel, sentinel
				}
				for r := c.r0; r < c.r1; r++ {
					for col := 0; col < c.cols; col++ {
						v := src[r*c.lds+col]
						if pz {
							v = 0 + v
						}
						want[col*c.ldd+r] = v
					}
				}
				TransposeRows(got, c.ldd, src, c.lds, c.cols, c.r0, c.r1, pz)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("dst[%d] (row %d, column %d of dst) = %v (bits %08x), want %v (bits %08x)",
							i, i/c.ldd, i%c.ldd, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
			})
		}
	}
}
