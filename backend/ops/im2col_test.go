package ops

import (
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
