package kernels

import (
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestConvGradFD(t *testing.T) {
	cases := []struct {
		name string
		x, w []int
		bias bool
		p    ConvParams
	}{
		{"plain", []int{2, 2, 5, 5}, []int{3, 2, 3, 3}, true, ConvParams{}},
		{"stride2_asympad", []int{2, 2, 6, 5}, []int{2, 2, 3, 2}, true, ConvParams{Strides: []int{2, 1}, Pads: []int{1, 0, 2, 1}}},
		{"dilation", []int{1, 2, 7, 6}, []int{2, 2, 2, 3}, false, ConvParams{Dilations: []int{2, 2}, Pads: []int{1, 1, 1, 1}}},
		{"groups", []int{2, 4, 5, 4}, []int{6, 2, 3, 3}, true, ConvParams{Group: 2, Pads: []int{1, 1, 1, 1}, Strides: []int{2, 2}}},
		{"depthwise", []int{2, 3, 5, 5}, []int{3, 1, 3, 3}, true, ConvParams{Group: 3, AutoPad: AutoPadSameUpper}},
		{"same_lower_stride", []int{1, 2, 6, 5}, []int{2, 2, 4, 4}, false, ConvParams{AutoPad: AutoPadSameLower, Strides: []int{2, 2}}},
		{"pointwise", []int{2, 3, 4, 3}, []int{4, 3, 1, 1}, true, ConvParams{}},
		{"conv1d", []int{2, 2, 9}, []int{3, 2, 3}, true, ConvParams{Strides: []int{2}, Pads: []int{2, 1}, Dilations: []int{2}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(1))
			vals := []*tensor.Dense{randTensor(rng, c.x...), randTensor(rng, c.w...), nil}
			diff := []bool{true, true, false}
			if c.bias {
				vals[2] = randTensor(rng, c.w[0])
				diff[2] = true
			}
			b := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Conv(in[0], in[1], in[2], c.p) }
			noteFD(gradCheck(t, vals, diff, b))
			checkF32(t, vals, b)
		})
	}
}

func TestConvErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 4, 5, 5))
	w := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 3, 3, 3))
	if _, err := Conv(x, w, nil, ConvParams{}); err == nil {
		t.Error("Conv with mismatched channels: expected an error")
	}
	w2 := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 4, 7, 7))
	if _, err := Conv(x, w2, nil, ConvParams{}); err == nil {
		t.Error("Conv with a kernel larger than the input: expected an error")
	}
	if _, err := Conv(x, w2, nil, ConvParams{AutoPad: "SAME"}); err == nil {
		t.Error("Conv with auto_pad SAME: expected an error")
	}
}
