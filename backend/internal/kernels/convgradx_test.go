package kernels

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// TestConvGradXAsForward checks the input gradient computed as a forward
// convolution of the output gradient (convGradXAsForward) against the
// col2im path, in float64 (to 1e-12) and float32 (to 1e-5 of the values'
// scale), on square and rectangular kernels with symmetric, asymmetric
// and no padding; and that it declines, leaving dx alone,
// where it does not apply (stride, dilation, groups, padding as large as
// the kernel, filters over bandCacheElems).
func TestConvGradXAsForward(t *testing.T) {
	defer func(v bool) { useGradXAsForward = v }(useGradXAsForward)
	cases := []struct {
		name  string
		x, w  []int
		p     ConvParams
		apply bool
	}{
		{"3x3 pad1", []int{2, 5, 17, 19}, []int{6, 5, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}, true},
		{"3x3 pad0", []int{1, 4, 20, 18}, []int{3, 4, 3, 3}, ConvParams{}, true},
		{"3x3 pad2", []int{2, 3, 16, 16}, []int{4, 3, 3, 3}, ConvParams{Pads: []int{2, 2, 2, 2}}, true},
		{"5x3 asymmetric", []int{2, 4, 18, 21}, []int{5, 4, 5, 3}, ConvParams{Pads: []int{2, 0, 1, 2}}, true},
		{"1x3 row", []int{3, 6, 12, 30}, []int{2, 6, 1, 3}, ConvParams{Pads: []int{0, 1, 0, 1}}, true},
		{"stride 2", []int{2, 4, 17, 17}, []int{3, 4, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 2}}, false},
		{"dilation 2", []int{2, 4, 17, 17}, []int{3, 4, 3, 3}, ConvParams{Pads: []int{2, 2, 2, 2}, Dilations: []int{2, 2}}, false},
		{"groups 2", []int{2, 4, 17, 17}, []int{4, 2, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}, Group: 2}, false},
		{"pad 3 on 3x3", []int{1, 2, 16, 16}, []int{2, 2, 3, 3}, ConvParams{Pads: []int{3, 1, 1, 1}}, false},
		{"filters over 1 MB", []int{1, 256, 6, 6}, []int{128, 256, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(11))
			w, gy := randTensor(rng, c.w...), randTensor(rng, g.n, g.m, g.oh, g.ow)
			w32, gy32 := toF32(w), toF32(gy)
			useGradXAsForward = true
			dx := make([]float64, g.n*g.c*g.inPlane)
			dx32 := make([]float32, len(dx))
			ok := convGradXAsForward(&g, data[float64](w), data[float64](gy), dx)
			ok32 := convGradXAsForward(&g, data[float32](w32), data[float32](gy32), dx32)
			if ok != c.apply || ok32 != c.apply {
				t.Fatalf("%v: applies %v (float32 %v), want %v", g, ok, ok32, c.apply)
			}
			useGradXAsForward = false
			want := data[float64](convGradX(&g, &scratch{}, w, gy, make([]float64, len(dx))))
			want32 := data[float32](convGradX(&g, &scratch{}, w32, gy32, make([]float32, len(dx))))
			if !c.apply {
				for i := range dx {
					if dx[i] != 0 || dx32[i] != 0 {
						t.Fatalf("declined, but dx[%d] = %v (float32 %v)", i, dx[i], dx32[i])
					}
				}
				return
			}
			scale := 0.0
			for _, v := range want {
				scale = max(scale, math.Abs(v))
			}
			for i := range want {
				if d := math.Abs(dx[i] - want[i]); d > 1e-12*scale {
					t.Fatalf("dX[%d] = %v, col2im %v", i, dx[i], want[i])
				}
				if d := math.Abs(float64(dx32[i] - want32[i])); d > 1e-5*scale {
					t.Fatalf("float32 dX[%d] = %v, col2im %v", i, dx32[i], want32[i])
				}
			}
		})
	}
}

// TestConvGradWSwapped checks the weight gradient computed as dWᵀ =
// col·gyᵀ (dwSwapMaxM) against gy·colᵀ, in float64 (1e-12) and float32
// (1e-5, relative to the largest value), on a 1×1 convolution (the input
// is its own im2col), padded 3×3 ones (im2col bands, and the cached
// whole-plane matrices) over several samples, and groups (never swapped).
func TestConvGradWSwapped(t *testing.T) {
	defer func(v int) { dwSwapMaxM = v }(dwSwapMaxM)
	cases := []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"1x1", []int{3, 8, 40, 50}, []int{16, 8, 1, 1}, ConvParams{}},
		{"3x3 pad1", []int{3, 5, 33, 41}, []int{12, 5, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"3x3 wide", []int{2, 70, 20, 24}, []int{64, 70, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"stride 2", []int{2, 40, 40, 44}, []int{7, 40, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 2}}},
		{"groups 2", []int{2, 4, 17, 17}, []int{4, 2, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}, Group: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(12))
			x, gy := randTensor(rng, c.x...), randTensor(rng, g.n, g.m, g.oh, g.ow)
			x32, gy32 := toF32(x), toF32(gy)
			run := func(maxM int) ([]float64, []float32) {
				dwSwapMaxM = maxM
				d := data[float64](convGradW[float64](g, newConvScratch(), x, gy))
				d32 := data[float32](convGradW[float32](g, newConvScratch(), x32, gy32))
				return d, d32
			}
			got, got32 := run(1 << 30)
			want, want32 := run(0)
			scale := 0.0
			for _, v := range want {
				scale = max(scale, math.Abs(v))
			}
			for i := range want {
				if d := math.Abs(got[i] - want[i]); d > 1e-12*scale {
					t.Fatalf("dW[%d] = %v swapped, %v not", i, got[i], want[i])
				}
				if d := math.Abs(float64(got32[i] - want32[i])); d > 1e-5*scale {
					t.Fatalf("float32 dW[%d] = %v swapped, %v not", i, got32[i], want32[i])
				}
			}
		})
	}
}
