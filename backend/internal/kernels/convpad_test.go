package kernels

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// TestConvPadWide checks that a padded stride-1 float32 convolution run
// over its zero-padded input (padWide) gives the im2col path's forward
// pass (with bias) and input gradient bit for bit (up to the sign of
// zeros), and its weight gradient to float32 round-off, whole and in
// chunks of samples; the input gradient into a buffer of NaN, which
// both paths must overwrite (the padded one's crop, uncleared).
func TestConvPadWide(t *testing.T) {
	cases := []struct {
		name  string
		x, w  []int
		p     ConvParams
		chunk bool // colBandElems small enough to pad a few samples at a time
	}{
		{"3x3_pad1", []int{3, 4, 12, 10}, []int{5, 4, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}, false},
		{"3x3_pad1_chunks", []int{12, 4, 12, 10}, []int{5, 4, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}, true},
		{"asym_dil", []int{2, 3, 11, 13}, []int{4, 3, 2, 3}, ConvParams{Pads: []int{0, 2, 1, 1}, Dilations: []int{2, 1}}, false},
		{"groups", []int{2, 4, 12, 12}, []int{6, 2, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}, Group: 2}, false},
	}
	saved, band, batched := useWideFwd, colBandElems, batchPlaneMax
	defer func() { useWideFwd, colBandElems, batchPlaneMax = saved, band, batched }()
	defer func(v bool) { useGradXAsForward = v }(useGradXAsForward)
	batchPlaneMax = 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			colBandElems = band
			if c.chunk { // just what the padded wide rows need: fewer samples than n per chunk
				colBandElems = (g.colRows + g.mg) * (((g.oh-1)*(g.w+2) + g.ow + 15) &^ 15)
			}
			useWideFwd = true
			p, ok := padWide[float32](&g)
			if !ok {
				t.Fatalf("%v: not run over its padded input", g)
			}
			if c.chunk && padChunk(&p) >= g.n {
				t.Fatalf("chunk of %d samples: expected fewer than %d", padChunk(&p), g.n)
			}
			rng := rand.New(rand.NewSource(8))
			x, w, b := toF32(randTensor(rng, c.x...)), toF32(randTensor(rng, c.w...)), toF32(randTensor(rng, g.m))
			gy := toF32(randTensor(rng, g.n, g.m, g.oh, g.ow))
			run := func(wide bool) (y, dx, dw []float32) {
				useWideFwd, useGradXAsForward = wide, wide // the reference: im2col and col2im
				sc := newConvScratch()
				y = data[float32](convForward(&g, sc, x, w, b, make([]float32, g.n*g.m*g.outPlane)))
				dirty := make([]float32, g.n*g.c*g.inPlane) // convGradX takes dx with any contents
				for i := range dirty {
					dirty[i] = float32(math.NaN())
				}
				dx = data[float32](convGradX(&g, sc, w, gy, dirty))
				dw = data[float32](convGradWInto(&g, sc, x, gy, make([]float32, g.m*g.colRows)))
				return y, dx, dw
			}
			ay, adx, adw := run(true)
			wy, wdx, wdw := run(false)
			for i := range wy {
				if ay[i] != wy[i] {
					t.Fatalf("y[%d]: padded wide rows %v, im2col %v", i, ay[i], wy[i])
				}
			}
			for i := range wdx {
				if adx[i] != wdx[i] {
					t.Fatalf("dX[%d]: padded wide rows %v, col2im %v", i, adx[i], wdx[i])
				}
			}
			for i := range wdw {
				if d := math.Abs(float64(adw[i] - wdw[i])); d > 1e-4*(1+math.Abs(float64(wdw[i]))) {
					t.Fatalf("dW[%d]: padded wide rows %v, im2col %v", i, adw[i], wdw[i])
				}
			}
		})
	}
}

// TestConvPadWideNonFinite checks that an infinite weight and a NaN input
// through the padded path give the im2col path's values: NaN and infinite
// values in the same places, every other value equal (the weight gradient
// to round-off).
func TestConvPadWideNonFinite(t *testing.T) {
	saved, batched := useWideFwd, batchPlaneMax
	defer func() { useWideFwd, batchPlaneMax = saved, batched }()
	defer func(v bool) { useGradXAsForward = v }(useGradXAsForward)
	batchPlaneMax = 0
	g, err := newConvGeom(tensor.Shape{2, 3, 9, 8}, tensor.Shape{4, 3, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(9))
	x, w := toF32(randTensor(rng, 2, 3, 9, 8)), toF32(randTensor(rng, 4, 3, 3, 3))
	gy := toF32(randTensor(rng, g.n, g.m, g.oh, g.ow))
	data[float32](w)[5] = float32(math.Inf(1))
	data[float32](x)[40] = float32(math.NaN())
	run := func(wide bool) [3][]float32 {
		useWideFwd, useGradXAsForward = wide, wide // the reference: im2col and col2im
		if _, ok := padWide[float32](&g); ok != wide {
			t.Fatalf("padWide = %v with WideFwd %v", ok, wide)
		}
		sc := newConvScratch()
		y := convForward(&g, sc, x, w, nil, make([]float32, g.n*g.m*g.outPlane))
		dx := convGradX(&g, sc, w, gy, make([]float32, g.n*g.c*g.inPlane))
		dw := convGradWInto(&g, sc, x, gy, make([]float32, g.m*g.colRows))
		return [3][]float32{data[float32](y), data[float32](dx), data[float32](dw)}
	}
	got, want := run(true), run(false)
	for k, what := range []string{"Y", "dX", "dW"} {
		bad := 0
		for i, v := range want[k] {
			u := got[k][i]
			switch {
			case v-v != 0 || u-u != 0: // NaN or infinite
				if !(v != v && u != u) && u != v {
					t.Fatalf("%s[%d]: padded %v, im2col %v", what, i, u, v)
				}
				bad++
			case math.Abs(float64(u-v)) > 1e-4*(1+math.Abs(float64(v))):
				t.Fatalf("%s[%d]: padded %v, im2col %v", what, i, u, v)
			}
		}
		if bad == 0 {
			t.Fatalf("%s: no NaN or infinity from the infinite weight and the NaN input", what)
		}
	}
}

// TestConvPadSegments checks the weight gradient of padded stride-1
// convolutions over the unpadded input (convGradWSegments: one segmented
// product per tap over the rectangle of outputs whose input lies inside
// the plane) against the dot products over the padded input and against
// im2col, to float32 round-off: pads of 1 to 3 (taps without any valid
// row or column), asymmetric pads, dilations, groups, more than 64
// channels, one-row and narrow planes, batches of 1 and odd, and the
// samples split among workers or not.
func TestConvPadSegments(t *testing.T) {
	cases := []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"mtan_3x3", []int{8, 16, 16, 16}, []int{16, 16, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"batch1", []int{1, 4, 12, 10}, []int{5, 4, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"odd_batch", []int{5, 3, 9, 11}, []int{7, 3, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"pad2_5x5", []int{3, 2, 16, 18}, []int{3, 2, 5, 5}, ConvParams{Pads: []int{2, 2, 2, 2}}},
		{"pad3_3x3", []int{2, 2, 6, 7}, []int{3, 2, 3, 3}, ConvParams{Pads: []int{3, 3, 3, 3}}}, // corner taps see no input row
		{"asym", []int{2, 3, 11, 13}, []int{4, 3, 3, 3}, ConvParams{Pads: []int{0, 2, 2, 0}}},
		{"dilated", []int{2, 3, 11, 13}, []int{4, 3, 2, 3}, ConvParams{Pads: []int{0, 2, 1, 1}, Dilations: []int{2, 1}}},
		{"groups", []int{2, 4, 12, 12}, []int{6, 2, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}, Group: 2}},
		{"channels70", []int{2, 70, 5, 6}, []int{5, 70, 1, 1}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"one_row", []int{2, 3, 1, 9}, []int{4, 3, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"narrow", []int{2, 3, 12, 8}, []int{4, 3, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
	}
	saved, batched, seg := useWideFwd, batchPlaneMax, usePadSegments
	defer func() { useWideFwd, batchPlaneMax, usePadSegments = saved, batched, seg }()
	batchPlaneMax, useWideFwd = 0, true
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			p, ok := padWide[float32](&g)
			if !ok || !wideRows[float32](&p) {
				t.Fatalf("%v: not run over its padded input's wide rows", g)
			}
			rng := rand.New(rand.NewSource(12))
			x := toF32(randTensor(rng, c.x...))
			gy := toF32(randTensor(rng, g.n, g.m, g.oh, g.ow))
			dw := func(seg, wide bool) []float32 {
				usePadSegments, useWideFwd = seg, wide
				return data[float32](convGradWInto(&g, newConvScratch(), x, gy, make([]float32, g.m*g.colRows)))
			}
			usePadSegments = true
			got := make([]float32, g.m*g.colRows)
			if !convGradWSegments(&g, data[float32](x), data[float32](gy), got) {
				t.Skip("no segmented dot kernel on this CPU")
			}
			for _, ref := range []struct {
				what string
				dw   []float32
			}{{"padded", dw(false, true)}, {"im2col", dw(false, false)}, {"convGradWInto", dw(true, true)}} {
				for i, v := range ref.dw {
					if d := math.Abs(float64(got[i] - v)); d > 1e-4*(1+math.Abs(float64(v))) {
						t.Fatalf("dW[%d]: segments %v, %s %v", i, got[i], ref.what, v)
					}
				}
			}
		})
	}
}
