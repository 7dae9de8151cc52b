package kernels

import (
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var poolCases = []struct {
	name string
	x    []int
	p    PoolParams
}{
	{"k2s2", []int{2, 2, 4, 6}, PoolParams{Kernel: []int{2, 2}, Strides: []int{2, 2}}},
	{"k3s2_asympad", []int{1, 2, 6, 5}, PoolParams{Kernel: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 0, 2, 1}}},
	{"ceil", []int{2, 1, 5, 7}, PoolParams{Kernel: []int{2, 3}, Strides: []int{2, 2}, CeilMode: true, Pads: []int{0, 1, 0, 1}}},
	{"dilation", []int{1, 2, 7, 7}, PoolParams{Kernel: []int{2, 2}, Dilations: []int{2, 3}, Strides: []int{1, 2}}},
	{"same_upper", []int{1, 2, 5, 5}, PoolParams{Kernel: []int{3, 2}, Strides: []int{2, 2}, AutoPad: AutoPadSameUpper}},
	{"include_pad_ceil", []int{1, 2, 5, 6}, PoolParams{Kernel: []int{3, 3}, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}, CeilMode: true, CountIncludePad: true}},
	{"pool1d", []int{2, 2, 9}, PoolParams{Kernel: []int{3}, Strides: []int{2}, Pads: []int{1, 1}}},
}

func TestMaxPoolGradFD(t *testing.T) {
	for _, c := range poolCases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(2))
			vals := []*tensor.Dense{randTensor(rng, c.x...)}
			b := func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				o, _, err := MaxPool(in[0], c.p)
				return o, err
			}
			noteFD(gradCheck(t, vals, []bool{true}, b))
			checkF32(t, vals, b)
		})
	}
}

func TestAveragePoolGradFD(t *testing.T) {
	for _, c := range poolCases {
		for _, inc := range []bool{false, true} {
			p := c.p
			p.CountIncludePad = p.CountIncludePad || inc
			t.Run(c.name, func(t *testing.T) {
				rng := rand.New(rand.NewSource(3))
				vals := []*tensor.Dense{randTensor(rng, c.x...)}
				b := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return AveragePool(in[0], p) }
				noteFD(gradCheck(t, vals, []bool{true}, b))
				checkF32(t, vals, b)
			})
		}
	}
}

func TestGlobalPoolGradFD(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(*gorgonia.Node) (*gorgonia.Node, error)
		x    []int
	}{
		{"avg4d", GlobalAveragePool, []int{2, 3, 4, 5}},
		{"avg3d", GlobalAveragePool, []int{2, 3, 7}},
		{"max4d", GlobalMaxPool, []int{2, 3, 4, 5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(4))
			vals := []*tensor.Dense{randTensor(rng, c.x...)}
			b := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return c.f(in[0]) }
			noteFD(gradCheck(t, vals, []bool{true}, b))
			checkF32(t, vals, b)
		})
	}
}

func TestMaxUnpoolGradFD(t *testing.T) {
	for _, c := range []struct {
		name  string
		x     []int
		p     PoolParams
		shape []int
	}{
		{"k2s2", []int{2, 2, 4, 6}, PoolParams{Kernel: []int{2, 2}, Strides: []int{2, 2}}, nil},
		{"k2s2_output_shape", []int{1, 2, 5, 5}, PoolParams{Kernel: []int{2, 2}, Strides: []int{2, 2}}, []int{1, 2, 5, 5}},
		{"k3s3_pad", []int{1, 1, 7, 8}, PoolParams{Kernel: []int{3, 3}, Strides: []int{3, 3}, Pads: []int{1, 1, 1, 1}}, []int{1, 1, 7, 8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(5))
			src := randTensor(rng, c.x...)
			// Pool once to learn the pooled shape.
			o := forward(t, []*tensor.Dense{src}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				o, _, err := MaxPool(in[0], c.p)
				return o, err
			})
			vals := []*tensor.Dense{src, randTensor(rng, o.Shape()...)}
			b := func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				_, idx, err := MaxPool(in[0], c.p)
				if err != nil {
					return nil, err
				}
				return MaxUnpool(in[1], idx, c.p, c.shape)
			}
			out := forward(t, vals, b)
			if c.shape == nil && !out.Shape().Eq(src.Shape()) {
				t.Errorf("default output shape %v, expected the pooled input's %v", out.Shape(), src.Shape())
			}
			noteFD(gradCheck(t, vals, []bool{false, true}, b))
			checkF32(t, vals, b)
		})
	}
}

func TestMaxPoolIndicesHand(t *testing.T) {
	// Two planes of 2×3; kernel 2×2 stride 1 pads 0: indices are global.
	x := tensor.New(tensor.WithShape(1, 2, 2, 3), tensor.WithBacking([]float64{
		1, 5, 2,
		3, 0, 4,
		9, 8, 7,
		6, 5, 9,
	}))
	b := func(in []*gorgonia.Node) (*gorgonia.Node, error) {
		_, idx, err := MaxPool(in[0], PoolParams{Kernel: []int{2, 2}})
		return idx, err
	}
	got := forward(t, []*tensor.Dense{x}, b).Data().([]int64)
	want := []int64{1, 1, 6, 11}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("indices %v, expected %v", got, want)
		}
	}
}
