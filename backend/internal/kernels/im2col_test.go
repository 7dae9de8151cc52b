package kernels

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// TestIm2colAgainstNaive checks im2col element by element against the
// definition, and col2im as its adjoint (⟨col2im(c), x⟩ = ⟨c, im2col(x)⟩),
// over strides, dilations and asymmetric pads.
func TestIm2colAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, s := range []int{1, 2, 3} {
		for _, d := range []int{1, 2} {
			for _, pads := range [][]int{{0, 0, 0, 0}, {1, 2, 0, 1}, {2, 0, 3, 2}} {
				p := ConvParams{Strides: []int{s, s + 1}, Dilations: []int{d, 1}, Pads: pads}
				g, err := newConvGeom(tensor.Shape{1, 2, 7, 6}, tensor.Shape{3, 2, 3, 2}, p)
				if err != nil {
					t.Fatal(err)
				}
				x := make([]float64, g.cg*g.inPlane)
				for i := range x {
					x[i] = rng.NormFloat64()
				}
				col := make([]float64, g.colRows*g.colCols)
				for i := range col {
					col[i] = 99 // must be overwritten everywhere
				}
				im2col(&g, x, col)
				c := make([]float64, len(col))
				for i := range c {
					c[i] = rng.NormFloat64()
				}
				lhs, rhs := 0.0, 0.0
				for ch := 0; ch < g.cg; ch++ {
					for ki := 0; ki < g.kh; ki++ {
						for kj := 0; kj < g.kw; kj++ {
							r := (ch*g.kh+ki)*g.kw + kj
							for oi := 0; oi < g.oh; oi++ {
								for oj := 0; oj < g.ow; oj++ {
									ii, jj := oi*g.y.s-g.y.pb+ki*g.y.d, oj*g.x.s-g.x.pb+kj*g.x.d
									want := 0.0
									if ii >= 0 && ii < g.h && jj >= 0 && jj < g.w {
										want = x[ch*g.inPlane+ii*g.w+jj]
									}
									k := r*g.colCols + oi*g.ow + oj
									if col[k] != want {
										t.Fatalf("%v: col[%d] = %v, expected %v", g, k, col[k], want)
									}
									rhs += c[k] * want
								}
							}
						}
					}
				}
				back := make([]float64, len(x))
				col2im(&g, c, back)
				for i := range x {
					lhs += back[i] * x[i]
				}
				if diff := lhs - rhs; diff > 1e-9 || diff < -1e-9 {
					t.Errorf("%v: ⟨col2im(c), x⟩ = %v, ⟨c, im2col(x)⟩ = %v", g, lhs, rhs)
				}
			}
		}
	}
}

// TestIm2colSameWidth checks im2colSameWidth (stride 1, dilation 1,
// output rows as wide as the input's) against the general row-by-row
// im2col, bit for bit, into NaN-filled matrices with a wider row stride,
// for bands of output rows at the top, middle and bottom, over kernels
// 1×1 to 5×3 with symmetric and asymmetric "same" pads and pads that
// leave taps without any valid row.
func TestIm2colSameWidth(t *testing.T) {
	defer func() { useIm2colSameWidth = true }()
	rng := rand.New(rand.NewSource(4))
	cases := []struct {
		x, w []int
		pads []int // top, left, bottom, right
	}{
		{[]int{1, 3, 9, 7}, []int{2, 3, 3, 3}, []int{1, 1, 1, 1}},
		{[]int{1, 2, 8, 6}, []int{2, 2, 3, 3}, []int{0, 2, 2, 0}},
		{[]int{1, 2, 7, 5}, []int{2, 2, 5, 3}, []int{2, 1, 2, 1}},
		{[]int{1, 2, 6, 6}, []int{2, 2, 1, 1}, []int{0, 0, 0, 0}},
		{[]int{1, 2, 3, 8}, []int{2, 2, 7, 1}, []int{4, 0, 4, 0}}, // taps beyond the plane
		{[]int{1, 2, 5, 4}, []int{2, 2, 3, 5}, []int{0, 2, 0, 2}},
	}
	for _, c := range cases {
		g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), ConvParams{Pads: c.pads})
		if err != nil {
			t.Fatal(err)
		}
		if g.ow != g.w {
			t.Fatalf("%v: output width %d, input %d: not a same-width case", c, g.ow, g.w)
		}
		x := make([]float32, g.cg*g.inPlane)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for _, band := range [][2]int{{0, g.oh}, {0, 1}, {1, g.oh - 1}, {g.oh - 2, g.oh}, {g.oh / 2, g.oh/2 + 1}} {
			r0, r1 := band[0], band[1]
			if r0 < 0 || r1 <= r0 {
				continue
			}
			ld := (r1-r0)*g.ow + 3
			run := func(fast bool) []float32 {
				useIm2colSameWidth = fast
				col := make([]float32, g.colRows*ld)
				for i := range col {
					col[i] = float32(math.NaN())
				}
				im2colRowsLd(&g, x, col, ld, r0, r1)
				return col
			}
			got, want := run(true), run(false)
			for r := 0; r < g.colRows; r++ {
				for j := 0; j < (r1-r0)*g.ow; j++ {
					k := r*ld + j
					if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
						t.Fatalf("%v rows [%d, %d): col[%d][%d] = %v, row by row %v", c, r0, r1, r, j, got[k], want[k])
					}
				}
			}
		}
	}
}
