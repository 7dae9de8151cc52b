package ops

import (
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// trimCases are convolutions with taps that read only padding: DeepLabV3's
// ASPP (dilation 12 on 4×4 planes: the centre tap alone), a dilated 5×5
// keeping its middle 3×3, pads on one side only, strided, grouped.
var trimCases = []struct {
	name     string
	x, w     []int
	p        ConvParams
	kh, kw   int // the smaller kernel
	ky0, kx0 int
}{
	{"aspp_d12", []int{2, 6, 4, 4}, []int{5, 6, 3, 3}, ConvParams{Dilations: []int{12, 12}, Pads: []int{12, 12, 12, 12}}, 1, 1, 1, 1},
	{"5x5_d2_on_3x3", []int{2, 3, 3, 3}, []int{4, 3, 5, 5}, ConvParams{Dilations: []int{2, 2}, Pads: []int{4, 4, 4, 4}}, 3, 3, 1, 1},
	{"top_only", []int{1, 2, 2, 5}, []int{3, 2, 5, 3}, ConvParams{Pads: []int{3, 1, 0, 1}}, 2, 3, 3, 0},
	{"strided", []int{2, 2, 3, 3}, []int{2, 2, 7, 7}, ConvParams{Strides: []int{2, 2}, Pads: []int{3, 3, 3, 3}}, 5, 5, 1, 1},
	{"grouped", []int{2, 4, 2, 2}, []int{6, 2, 5, 5}, ConvParams{Group: 2, Pads: []int{2, 2, 2, 2}}, 3, 3, 1, 1},
}

// TestConvTrimTaps checks that the convolutions above drop the taps that
// read only padding (trimConv: the expected smaller kernel) and that the
// three passes with the smaller kernel match the whole kernel's, into
// dirty buffers: float64 to 1e-12, float32 to 2e-6 of the terms' scale.
func TestConvTrimTaps(t *testing.T) {
	for _, c := range trimCases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			tr := trimConv(&g)
			if tr == nil || tr.g.kh != c.kh || tr.g.kw != c.kw || tr.ky0 != c.ky0 || tr.kx0 != c.kx0 {
				t.Fatalf("%v: trimmed to %+v, expected a %d×%d kernel from tap (%d, %d)", g, tr, c.kh, c.kw, c.ky0, c.kx0)
			}
			rng := rand.New(rand.NewSource(5))
			x, w, b := randTensor(rng, c.x...), randTensor(rng, c.w...), randTensor(rng, g.m)
			gy := randTensor(rng, g.n, g.m, g.oh, g.ow)
			dirty := func(n int) []float64 {
				d := make([]float64, n)
				for i := range d {
					d[i] = 1e6 + float64(i)
				}
				return d
			}
			whole := func(x, w, b, gy tensor.Tensor) [3][]float64 {
				y := convForward(g, newConvScratch(), x, w, b, make([]float64, g.n*g.m*g.outPlane))
				dx := convGradX(g, newConvScratch(), w, gy, make([]float64, g.n*g.c*g.inPlane))
				dw := convGradW[float64](g, newConvScratch(), x, gy)
				return [3][]float64{data[float64](y), data[float64](dx), data[float64](dw)}
			}
			trimmed := func(x, w, b, gy tensor.Tensor) [3][]float64 {
				sc := newConvScratch()
				y := trimmedForward(&g, tr, sc, x, w, b, dirty(g.n*g.m*g.outPlane))
				dx := trimmedGradX(&g, tr, sc, w, gy, dirty(g.n*g.c*g.inPlane))
				dw := trimmedGradW(&g, tr, sc, x, gy, dirty(g.m*g.colRows))
				return [3][]float64{data[float64](y), data[float64](dx), data[float64](dw)}
			}
			whole32 := func() [3][]float32 {
				x, w, b, gy := toF32(x), toF32(w), toF32(b), toF32(gy)
				y := convForward(g, newConvScratch(), x, w, b, make([]float32, g.n*g.m*g.outPlane))
				dx := convGradX(g, newConvScratch(), w, gy, make([]float32, g.n*g.c*g.inPlane))
				dw := convGradW[float32](g, newConvScratch(), x, gy)
				return [3][]float32{data[float32](y), data[float32](dx), data[float32](dw)}
			}
			trimmed32 := func() [3][]float32 {
				x, w, b, gy := toF32(x), toF32(w), toF32(b), toF32(gy)
				sc := newConvScratch()
				y := trimmedForward(&g, tr, sc, x, w, b, toF32s(dirty(g.n*g.m*g.outPlane)))
				dx := trimmedGradX(&g, tr, sc, w, gy, toF32s(dirty(g.n*g.c*g.inPlane)))
				dw := trimmedGradW(&g, tr, sc, x, gy, toF32s(dirty(g.m*g.colRows)))
				return [3][]float32{data[float32](y), data[float32](dx), data[float32](dw)}
			}
			ref, got := whole(x, w, b, gy), trimmed(x, w, b, gy)
			ref32, got32 := whole32(), trimmed32()
			comparePasses(t, "trimmed", "whole kernel", ref, got, ref32, got32)
		})
	}
}

// TestConvTrimTapsGradFD checks the gradients of Conv with trimmed taps
// (x, w, bias) against float64 central differences, and its float32
// results against float64.
func TestConvTrimTapsGradFD(t *testing.T) {
	for _, c := range trimCases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil || trimConv(&g) == nil {
				t.Fatalf("%s: no taps trimmed (%v)", c.name, err)
			}
			rng := rand.New(rand.NewSource(11))
			vals := []*tensor.Dense{randTensor(rng, c.x...), randTensor(rng, c.w...), randTensor(rng, g.m)}
			p := c.p
			b := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Conv(in[0], in[1], in[2], p) }
			noteFD(gradCheck(t, vals, []bool{true, true, true}, b))
			checkF32(t, vals, b)
		})
	}
}
