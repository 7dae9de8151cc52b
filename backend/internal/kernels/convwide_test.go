package kernels

import (
	"math"
	"math/rand"
	"runtime"
	"testing"

	"gorgonia.org/tensor"
)

// TestConvWideForward checks that the forward pass and the input gradient
// over wide rows (wideForward) give the im2col products' values (bit for
// bit, up to the sign of zeros), in float32 and float64, with a bias, on
// LeNet's two layers, a rectangular one with dilation, groups, a kernel as
// wide as the input and one output row; the input gradient into a buffer
// of NaN, which each channel's first tap and the clear after it overwrite.
func TestConvWideForward(t *testing.T) {
	cases := []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"lenet_conv1", []int{3, 1, 36, 36}, []int{10, 1, 9, 9}, ConvParams{}},
		{"lenet_conv2", []int{2, 10, 14, 14}, []int{20, 10, 5, 5}, ConvParams{}},
		{"rect_dil", []int{2, 3, 15, 13}, []int{4, 3, 2, 2}, ConvParams{Dilations: []int{1, 2}}},
		{"grouped", []int{2, 4, 9, 9}, []int{6, 2, 3, 3}, ConvParams{Group: 2}},
		{"full_width", []int{2, 2, 7, 3}, []int{5, 2, 2, 1}, ConvParams{}}, // oW = W: no column dropped
		{"one_row", []int{1, 2, 3, 8}, []int{3, 2, 3, 2}, ConvParams{}},    // L = oW
	}
	saved, batched, total := useWideFwd, batchPlaneMax, colCacheTotal
	defer func() { useWideFwd, batchPlaneMax, colCacheTotal = saved, batched, total }()
	defer func(v bool) { useGradXAsForward = v }(useGradXAsForward)
	batchPlaneMax = 0
	colCacheTotal = 0 // float64 would keep im2col matrices and not use wide rows
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			useWideFwd = true
			if !wideForward(&g) {
				t.Fatalf("%v: not a wide forward pass", g)
			}
			rng := rand.New(rand.NewSource(6))
			x, w, b := randTensor(rng, c.x...), randTensor(rng, c.w...), randTensor(rng, g.m)
			x32, w32, b32 := toF32(x), toF32(w), toF32(b)
			gy := randTensor(rng, g.n, g.m, g.oh, g.ow)
			gy32 := toF32(gy)
			run := func(wide bool) (y, dx []float64, y32, dx32 []float32) {
				useWideFwd, useGradXAsForward = wide, wide // the reference: im2col and col2im
				y = data[float64](convForward(&g, &scratch{}, x, w, b, make([]float64, g.n*g.m*g.outPlane)))
				y32 = data[float32](convForward(&g, &scratch{}, x32, w32, b32, make([]float32, g.n*g.m*g.outPlane)))
				// dx with any contents: every element must be written
				dx = data[float64](convGradX(&g, &scratch{}, w, gy, nanSlice[float64](g.n*g.c*g.inPlane)))
				dx32 = data[float32](convGradX(&g, &scratch{}, w32, gy32, nanSlice[float32](g.n*g.c*g.inPlane)))
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

// TestConvWideInPlace checks that the forward wide rows' product reading
// each tap's row in place in the input (wideInPlace, fgemm.SgemmRows)
// gives the bits of the product over the rows copied into col, and that
// the weight gradient's segmented dot products (useWideSegments) stay within
// the round-off of the dot products over gy spread to rows of width W:
// LeNet's layers, wide rows whose length leaves a partial panel of
// columns (read in place with room after them, packed for the last
// sample's rows at the input's end) or none, dilations, groups, kernels as
// wide as the input, and more than 12 filters (whole and partial tiles).
// The samples are a multiple of the workers, so that the products are not
// split among them (wideInPlace's condition).
func TestConvWideInPlace(t *testing.T) {
	cases := []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"lenet_conv1", []int{1, 1, 36, 36}, []int{10, 1, 9, 9}, ConvParams{}},
		{"lenet_conv2", []int{1, 10, 14, 14}, []int{20, 10, 5, 5}, ConvParams{}},
		{"rect_dil", []int{1, 3, 15, 13}, []int{4, 3, 2, 2}, ConvParams{Dilations: []int{1, 2}}},
		{"panel_exact", []int{1, 2, 8, 36}, []int{13, 2, 3, 5}, ConvParams{}},  // L = 5·36+32 = 212: 6 panels + 20
		{"whole_panels", []int{1, 1, 2, 34}, []int{12, 1, 1, 3}, ConvParams{}}, // L = 32
		{"grouped", []int{1, 4, 9, 9}, []int{6, 2, 3, 3}, ConvParams{Group: 2}},
		{"full_width", []int{1, 2, 7, 3}, []int{25, 2, 2, 1}, ConvParams{}}, // oW = W: no column dropped
	}
	saved, batched, total := useWideFwd, batchPlaneMax, colCacheTotal
	defer func() { useWideFwd, batchPlaneMax, colCacheTotal = saved, batched, total }()
	defer func(a, b bool) { useWideInPlace, useWideSegments = a, b }(useWideInPlace, useWideSegments)
	batchPlaneMax = 0
	colCacheTotal = 0
	useWideFwd = true
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			xs := append([]int{2 * runtime.GOMAXPROCS(0)}, c.x[1:]...)
			g, err := newConvGeom(tensor.Shape(xs), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			useWideInPlace, useWideSegments = true, true
			if !wideForward(&g) || !wideInPlace[float32](&g) {
				t.Fatalf("%v: wideForward %v, wideInPlace %v", g, wideForward(&g), wideInPlace[float32](&g))
			}
			r := rand.New(rand.NewSource(8))
			x, w, b := normal32(r, xs), normal32(r, c.w), normal32(r, []int{g.m})
			gy := normal32(r, []int{g.n, g.m, g.oh, g.ow})
			run := func(inPlace bool) (y, dw []float32) {
				useWideInPlace, useWideSegments = inPlace, inPlace
				y = make([]float32, g.n*g.m*g.outPlane)
				for i := range y {
					y[i] = float32(math.NaN()) // every output is written
				}
				convForward(&g, &scratch{}, x, w, b, y)
				dw = data[float32](convGradWInto(&g, newConvScratch(), x, gy, make([]float32, g.m*g.colRows)))
				return y, dw
			}
			iy, idw := run(true)
			cy, cdw := run(false)
			for i := range cy {
				if math.Float32bits(iy[i]) != math.Float32bits(cy[i]) {
					t.Fatalf("y[%d]: rows in place %v, copied %v", i, iy[i], cy[i])
				}
			}
			abs := func(t tensor.Tensor) tensor.Tensor {
				d := append([]float32{}, data[float32](t)...)
				for i, v := range d {
					d[i] = float32(math.Abs(float64(v)))
				}
				return newTensor(t.Shape(), d)
			}
			useWideInPlace, useWideSegments = false, false
			bound := data[float32](convGradWInto(&g, newConvScratch(), abs(x), abs(gy), make([]float32, g.m*g.colRows)))
			for i := range cdw {
				if d := math.Abs(float64(idw[i]) - float64(cdw[i])); !(d <= 2e-6*float64(bound[i])) {
					t.Fatalf("dW[%d]: segments %v, spread rows %v (bound Σ|gy|·|x| = %v)", i, idw[i], cdw[i], bound[i])
				}
			}
		})
	}
}
