package kernels

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestPadGradFD(t *testing.T) {
	for _, c := range []struct {
		name string
		x    []int
		p    PadParams
	}{
		{"constant4d", []int{1, 2, 3, 4}, PadParams{Pads: []int{0, 0, 1, 2, 0, 1, 2, 0}, Value: 0.5}},
		{"reflect", []int{1, 2, 4, 3}, PadParams{Mode: PadReflect, Pads: []int{0, 0, 2, 1, 0, 0, 3, 2}}},
		{"edge", []int{2, 1, 3, 3}, PadParams{Mode: PadEdge, Pads: []int{0, 0, 2, 1, 0, 0, 1, 3}}},
		{"crop", []int{1, 2, 5, 4}, PadParams{Pads: []int{0, 0, -1, 2, 0, 0, 1, -2}}},
		{"reflect2d", []int{3, 4}, PadParams{Mode: PadReflect, Pads: []int{1, 2, 2, 3}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(8))
			vals := []*tensor.Dense{randTensor(rng, c.x...)}
			b := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Pad(in[0], c.p) }
			noteFD(gradCheck(t, vals, []bool{true}, b))
			checkF32(t, vals, b)
		})
	}
}

func TestPadHand(t *testing.T) {
	x := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))
	for _, c := range []struct {
		p    PadParams
		want []float64
	}{
		{PadParams{Pads: []int{2, 1}, Value: 9}, []float64{9, 9, 1, 2, 3, 9}},
		{PadParams{Mode: PadReflect, Pads: []int{2, 2}}, []float64{3, 2, 1, 2, 3, 2, 1}},
		{PadParams{Mode: PadEdge, Pads: []int{2, 1}}, []float64{1, 1, 1, 2, 3, 3}},
		{PadParams{Pads: []int{-1, 1}}, []float64{2, 3, 0}},
	} {
		got := forward(t, []*tensor.Dense{x}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Pad(in[0], c.p) }).Data().([]float64)
		if len(got) != len(c.want) {
			t.Fatalf("%+v: got %v, expected %v", c.p, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%+v: got %v, expected %v", c.p, got, c.want)
			}
		}
	}
}

var resizeCases = []struct {
	name string
	x    []int
	p    ResizeParams
}{
	{"nearest_asym_floor_x2", []int{1, 2, 3, 4}, ResizeParams{Mode: ResizeNearest, CoordMode: CoordAsymmetric, NearestMode: NearestFloor, Scales: []float64{1, 1, 2, 2}}},
	{"nearest_halfpixel_rpf", []int{1, 2, 3, 5}, ResizeParams{Scales: []float64{1, 1, 1.5, 0.6}}},
	{"nearest_tf_ceil", []int{2, 1, 4, 3}, ResizeParams{CoordMode: CoordTFHalfPixelForNN, NearestMode: NearestCeil, Sizes: []int{2, 1, 7, 5}}},
	{"nearest_align_rpc", []int{1, 1, 3, 3}, ResizeParams{CoordMode: CoordAlignCorners, NearestMode: NearestRoundPreferCeil, Sizes: []int{1, 1, 5, 4}}},
	{"linear_halfpixel", []int{1, 2, 3, 4}, ResizeParams{Mode: ResizeLinear, Scales: []float64{1, 1, 2, 1.5}}},
	{"linear_pytorch_down", []int{1, 2, 6, 5}, ResizeParams{Mode: ResizeLinear, CoordMode: CoordPytorchHalfPixel, Sizes: []int{1, 2, 3, 1}}},
	{"linear_align", []int{2, 1, 3, 4}, ResizeParams{Mode: ResizeLinear, CoordMode: CoordAlignCorners, Sizes: []int{2, 1, 5, 7}}},
	{"linear_asym", []int{1, 2, 3, 3}, ResizeParams{Mode: ResizeLinear, CoordMode: CoordAsymmetric, Scales: []float64{1, 1, 2, 2}}},
	{"linear_1d", []int{2, 2, 5}, ResizeParams{Mode: ResizeLinear, Scales: []float64{1, 1, 1.6}}},
}

func TestResizeGradFD(t *testing.T) {
	for _, c := range resizeCases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(9))
			vals := []*tensor.Dense{randTensor(rng, c.x...)}
			b := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Resize(in[0], c.p) }
			noteFD(gradCheck(t, vals, []bool{true}, b))
			checkF32(t, vals, b)
		})
	}
}

// TestResizeSeparable checks the separable resize on every resizeCase in
// float32, into buffers holding garbage: the forward pass against each
// output element interpolated from its four inputs as
// a0·(b0·x00 + b1·x01) + a1·(b0·x10 + b1·x11), bit for bit, and the
// gradient against each output element's four contributions scattered
// in float64, to float32 round-off.
func TestResizeSeparable(t *testing.T) {
	for _, c := range resizeCases {
		t.Run(c.name, func(t *testing.T) {
			g, os, _, err := newResizeGeom(tensor.Shape(c.x), c.p)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(3))
			x := make([]float32, tensor.Shape(c.x).TotalSize())
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			gy := make([]float32, os.TotalSize())
			for i := range gy {
				gy[i] = float32(rng.NormFloat64())
			}
			out := make([]float32, len(gy))
			dx := make([]float32, len(x))
			for i := range out {
				out[i] = float32(math.NaN())
			}
			for i := range dx {
				dx[i] = float32(math.NaN())
			}
			resizeFwd(g, newTensor(tensor.Shape(c.x), x), os, out)
			resizeBwd(g, newTensor(os, gy), tensor.Shape(c.x), dx)
			ry, rx := g.axes[0], g.axes[1]
			want := make([]float64, len(dx))
			for pc := 0; pc < g.n*g.c; pc++ {
				xp := x[pc*g.h*g.w:]
				for oi := 0; oi < g.oh; oi++ {
					r0, r1 := xp[ry.i0[oi]*g.w:], xp[ry.i1[oi]*g.w:]
					a0, a1 := float32(ry.w0[oi]), float32(ry.w1[oi])
					for oj := 0; oj < g.ow; oj++ {
						j0, j1 := rx.i0[oj], rx.i1[oj]
						b0, b1 := float32(rx.w0[oj]), float32(rx.w1[oj])
						e := a0*(b0*r0[j0]+b1*r0[j1]) + a1*(b0*r1[j0]+b1*r1[j1])
						k := (pc*g.oh+oi)*g.ow + oj
						if math.Float32bits(out[k]) != math.Float32bits(e) {
							t.Fatalf("output %d: %v, want %v", k, out[k], e)
						}
						v := float64(gy[k])
						d := want[pc*g.h*g.w:]
						d[ry.i0[oi]*g.w+j0] += ry.w0[oi] * rx.w0[oj] * v
						d[ry.i0[oi]*g.w+j1] += ry.w0[oi] * rx.w1[oj] * v
						d[ry.i1[oi]*g.w+j0] += ry.w1[oi] * rx.w0[oj] * v
						d[ry.i1[oi]*g.w+j1] += ry.w1[oi] * rx.w1[oj] * v
					}
				}
			}
			for i, w := range want {
				if math.Abs(float64(dx[i])-w) > 1e-5*(1+math.Abs(w)) {
					t.Fatalf("gradient %d: %v, want %v", i, dx[i], w)
				}
			}
		})
	}
}
