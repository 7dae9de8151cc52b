package ops

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// TestConvWideForward checks that the forward pass and the input gradient
// over wide rows (wideForward) give the im2col products' values (bit for
// bit, up to the sign of zeros), in float32 and float64, with a bias, on
// LeNet's two layers and a rectangular one with dilation.
func TestConvWideForward(t *testing.T) {
	cases := []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"lenet_conv1", []int{3, 1, 36, 36}, []int{10, 1, 9, 9}, ConvParams{}},
		{"lenet_conv2", []int{2, 10, 14, 14}, []int{20, 10, 5, 5}, ConvParams{}},
		{"rect_dil", []int{2, 3, 15, 13}, []int{4, 3, 2, 2}, ConvParams{Dilations: []int{1, 2}}},
	}
	saved, batched, total := WideFwd, BatchPlaneMax, ColCacheTotal
	defer func() { WideFwd, BatchPlaneMax, ColCacheTotal = saved, batched, total }()
	defer func(v bool) { GradXAsForward = v }(GradXAsForward)
	BatchPlaneMax = 0
	ColCacheTotal = 0 // float64 would keep im2col matrices and not use wide rows
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			WideFwd = true
			if !wideForward(&g) {
				t.Fatalf("%v: not a wide forward pass", g)
			}
			rng := rand.New(rand.NewSource(6))
			x, w, b := randTensor(rng, c.x...), randTensor(rng, c.w...), randTensor(rng, g.m)
			x32, w32, b32 := toF32(x), toF32(w), toF32(b)
			gy := randTensor(rng, g.n, g.m, g.oh, g.ow)
			gy32 := toF32(gy)
			run := func(wide bool) (y, dx []float64, y32, dx32 []float32) {
				WideFwd, GradXAsForward = wide, wide // the reference: im2col and col2im
				y = data[float64](convForward(g, &scratch{}, x, w, b, make([]float64, g.n*g.m*g.outPlane)))
				y32 = data[float32](convForward(g, &scratch{}, x32, w32, b32, make([]float32, g.n*g.m*g.outPlane)))
				dx = data[float64](convGradX(g, &scratch{}, w, gy, make([]float64, g.n*g.c*g.inPlane)))
				dx32 = data[float32](convGradX(g, &scratch{}, w32, gy32, make([]float32, g.n*g.c*g.inPlane)))
				return y, dx, y32, dx32
			}
			ay, adx, ay32, adx32 := run(true)
			wy, wdx, wy32, wdx32 := run(false)
			for i := range wy {
				if ay[i] != wy[i] || ay32[i] != wy32[i] {
					t.Fatalf("y[%d]: wide rows %v (float32 %v), im2col %v (%v)", i, ay[i], ay32[i], wy[i], wy32[i])
				}
			}
			for i := range wdx {
				if adx[i] != wdx[i] || adx32[i] != wdx32[i] {
					t.Fatalf("dX[%d]: wide rows %v (float32 %v), col2im %v (%v)", i, adx[i], adx32[i], wdx[i], wdx32[i])
				}
			}
		})
	}
}
