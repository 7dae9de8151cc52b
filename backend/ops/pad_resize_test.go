package ops

import (
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
