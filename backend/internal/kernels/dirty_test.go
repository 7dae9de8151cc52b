package kernels

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// normal32 returns a float32 tensor of shape s with standard normal
// entries drawn from r.
func normal32(r *rand.Rand, s []int) tensor.Tensor {
	d := make([]float32, tensor.Shape(s).TotalSize())
	for i := range d {
		d[i] = float32(r.NormFloat64())
	}
	return newTensor(tensor.Shape(s), d)
}

// TestConvForwardDirtyBuffer checks that Conv's forward pass writes every
// element of its output buffer: a NaN-filled buffer gives the bits a
// zeroed one gives (direct, banded, cached and grouped convolutions).
func TestConvForwardDirtyBuffer(t *testing.T) {
	cases := []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"direct 1x1", []int{3, 4, 5, 5}, []int{6, 4, 1, 1}, ConvParams{}},
		{"3x3 padded", []int{2, 3, 8, 8}, []int{5, 3, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"strided grouped", []int{1, 4, 9, 9}, []int{4, 2, 3, 3}, ConvParams{Strides: []int{2, 2}, Group: 2}},
	}
	r := rand.New(rand.NewSource(9))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			x, w, b := normal32(r, c.x), normal32(r, c.w), normal32(r, []int{c.w[0]})
			n := g.n * g.m * g.outPlane
			want := data[float32](convForward(&g, newConvScratch(), x, w, b, make([]float32, n)))
			dirty := make([]float32, n)
			for i := range dirty {
				dirty[i] = float32(math.NaN())
			}
			got := data[float32](convForward(&g, newConvScratch(), x, w, b, dirty))
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("element %d: %v into a dirty buffer, %v into a zeroed one", i, got[i], want[i])
				}
			}
		})
	}
}

// TestConvGradWWideRows checks the weight gradient over wide rows
// (tapOffsets, SdotRows) against the banded im2col one: equal to float32
// round-off for convolutions of stride 1 without padding, bit-identical
// where the wide rows do not apply (padding, stride) or the input holds
// an infinity (they would add 0·∞).
func TestConvGradWWideRows(t *testing.T) {
	cases := []struct {
		name  string
		x, w  []int
		p     ConvParams
		inf   bool
		exact bool
	}{
		{"lenet conv1", []int{3, 1, 36, 36}, []int{10, 1, 9, 9}, ConvParams{}, false, false},
		{"channels dilated", []int{2, 3, 11, 12}, []int{4, 3, 3, 2}, ConvParams{Dilations: []int{2, 3}}, false, false},
		{"grouped", []int{2, 4, 7, 7}, []int{6, 2, 3, 3}, ConvParams{Group: 2}, false, false},
		{"infinite input", []int{2, 1, 10, 10}, []int{3, 1, 3, 3}, ConvParams{}, true, true},
		{"padded", []int{2, 2, 8, 8}, []int{3, 2, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}, false, true},
		{"strided", []int{2, 2, 9, 9}, []int{3, 2, 3, 3}, ConvParams{Strides: []int{2, 2}}, false, true},
	}
	r := rand.New(rand.NewSource(10))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			if (g.tapOffsets() != nil) != (!c.exact || c.inf) {
				t.Fatalf("tapOffsets %v for %v", g.tapOffsets(), g)
			}
			x, gy := normal32(r, c.x), normal32(r, []int{g.n, g.m, g.oh, g.ow})
			if c.inf {
				data[float32](x)[5] = float32(math.Inf(1))
			}
			grad := func(wide bool, x, gy tensor.Tensor) []float32 {
				defer func(v bool) { useWideGradW = v }(useWideGradW)
				useWideGradW = wide
				return data[float32](convGradWInto(&g, newConvScratch(), x, gy, make([]float32, g.m*g.colRows)))
			}
			abs := func(t tensor.Tensor) tensor.Tensor {
				d := append([]float32{}, data[float32](t)...)
				for i, v := range d {
					d[i] = float32(math.Abs(float64(v)))
				}
				return newTensor(t.Shape(), d)
			}
			banded, wide := grad(false, x, gy), grad(true, x, gy)
			// Σ|gy|·|x| over each weight's products bounds the round-off.
			bound := grad(false, abs(x), abs(gy))
			for i := range banded {
				b, w := float64(banded[i]), float64(wide[i])
				if c.exact {
					if math.Float32bits(banded[i]) != math.Float32bits(wide[i]) && !(b != b && w != w) {
						t.Fatalf("dW[%d] = %v, banded im2col %v (expected the same bits)", i, w, b)
					}
					continue
				}
				if math.Abs(b-w) > 2e-6*float64(bound[i]) {
					t.Fatalf("dW[%d] = %v, banded im2col %v (bound Σ|gy|·|x| = %v)", i, w, b, bound[i])
				}
			}
		})
	}
}

// TestConvGradXDirtyBuffer checks that Conv's input gradient gives into a
// NaN-filled buffer the bits it gives into a zeroed one, on every path:
// as a forward convolution, col2im (a direct 1×1, filters over 1 MB,
// stride 2), the batched small planes (a 3×3 and a direct 1×1), the
// zero-padded few channels and the wide rows.
func TestConvGradXDirtyBuffer(t *testing.T) {
	cases := []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"as forward", []int{2, 40, 20, 24}, []int{48, 40, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"direct 1x1", []int{2, 40, 20, 24}, []int{48, 40, 1, 1}, ConvParams{}},
		{"filters over 1 MB", []int{1, 256, 12, 12}, []int{128, 256, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"stride 2", []int{2, 40, 30, 30}, []int{8, 40, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 2}}},
		{"small planes", []int{4, 16, 4, 6}, []int{16, 16, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"small planes direct 1x1", []int{4, 24, 4, 4}, []int{16, 24, 1, 1}, ConvParams{}},
		{"few channels padded", []int{2, 3, 16, 16}, []int{5, 3, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"wide rows", []int{3, 1, 36, 36}, []int{10, 1, 9, 9}, ConvParams{}},
	}
	r := rand.New(rand.NewSource(13))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			if c.name == "small planes direct 1x1" && !(batchedPlanes(&g) && g.direct) {
				t.Fatalf("%v: not a direct product over the batch", g)
			}
			w, gy := normal32(r, c.w), normal32(r, []int{g.n, g.m, g.oh, g.ow})
			n := g.n * g.c * g.inPlane
			want := data[float32](convGradX(&g, newConvScratch(), w, gy, make([]float32, n)))
			dirty := make([]float32, n)
			for i := range dirty {
				dirty[i] = float32(math.NaN())
			}
			got := data[float32](convGradX(&g, newConvScratch(), w, gy, dirty))
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("element %d: %v into a dirty buffer, %v into a zeroed one", i, got[i], want[i])
				}
			}
		})
	}
}

// TestGlobalAvgGradDirtyBuffer checks that GlobalAveragePool's gradient
// writes every element of the buffer it is handed: a NaN-filled buffer
// gives the bits of a fresh one.
func TestGlobalAvgGradDirtyBuffer(t *testing.T) {
	xs := tensor.Shape{3, 5, 4, 6}
	gy := normal32(rand.New(rand.NewSource(4)), []int{3, 5, 1, 1})
	want := data[float32](globalAvgBwd(gy, xs, make([]float32, xs.TotalSize())))
	buf := make([]float32, xs.TotalSize())
	for i := range buf {
		buf[i] = float32(math.NaN())
	}
	got := data[float32](globalAvgBwd(gy, xs, buf))
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("dx[%d] = %v into a dirty buffer, %v into a fresh one", i, got[i], want[i])
		}
	}
}
