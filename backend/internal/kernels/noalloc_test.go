package kernels

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// TestSmallKernelsAllocateNothing checks that the loops of small planes
// (ShuffleNet's, MobileNet's and EfficientNet's at 64×64: depthwise
// convolutions by loops and by phase planes, the batched convolutions'
// im2col and gradient gather) make no heap object when they run as one
// chunk: a closure handed to the worker pool is one even when the caller
// runs it, and ops of this size make hundreds of them a step. The phase
// planes' tap offsets (newDwGeom) are the one object allowed there.
func TestSmallKernelsAllocateNothing(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	dw := func(n, c, h, k, s int) convGeom {
		g, err := newConvGeom(tensor.Shape{n, c, h, h}, tensor.Shape{c, 1, k, k},
			ConvParams{Group: c, Strides: []int{s, s}, Pads: []int{k / 2, k / 2, k / 2, k / 2}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	pw := func(n, c, m, h int) convGeom {
		g, err := newConvGeom(tensor.Shape{n, c, h, h}, tensor.Shape{m, c, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	type run struct {
		name string
		max  float64
		f    func()
	}
	var runs []run
	for _, c := range []struct {
		name string
		g    convGeom
		max  float64
	}{
		{"depthwise_loops_4x4", dw(4, 24, 8, 3, 2), 0},
		{"depthwise_phases_8x8_s2", dw(4, 24, 16, 3, 2), 1},
		{"depthwise_phases_8x8_s1", dw(4, 24, 8, 3, 1), 1},
	} {
		g := c.g
		if !depthwiseOK(&g) || !oneChunk(g.n*g.c, g.outPlane*g.kh*g.kw) || dwDirect(&g) != (c.max == 0) {
			t.Fatalf("%s: not a one-chunk depthwise case of its path", c.name)
		}
		x, w, gy := vals(g.n*g.c*g.inPlane), vals(g.c*g.kh*g.kw), vals(g.n*g.m*g.outPlane)
		out, dx, dwt := vals(len(gy)), vals(len(x)), vals(len(w))
		runs = append(runs,
			run{c.name + "/forward", c.max, func() { convForwardDepthwise(&g, x, w, nil, out) }},
			run{c.name + "/gradX", c.max, func() { convGradXDepthwise(&g, w, gy, dx) }},
			run{c.name + "/gradW", c.max, func() { convGradWDepthwise(&g, x, gy, dwt) }})
	}
	g := pw(4, 16, 16, 4)
	if !batchedPlanes(&g) || !oneChunk(g.n, g.colRows*g.outPlane) {
		t.Fatal("batched case: not a one-chunk batched convolution")
	}
	x, gy := vals(g.n*g.c*g.inPlane), vals(g.n*g.m*g.outPlane)
	col, gyAll := vals(g.colRows*g.n*g.outPlane), vals(len(gy))
	runs = append(runs,
		run{"batched_4x4/im2col", 0, func() { batchIm2col(&g, x, col) }},
		run{"batched_4x4/gather", 0, func() { gatherGrad(&g, gy, gyAll) }})
	for _, r := range runs {
		r.f() // first call: the loops' run lists and scratch buffers
		if got := testing.AllocsPerRun(20, r.f); got > r.max {
			t.Errorf("%s: %.0f heap objects a call, want at most %.0f", r.name, got, r.max)
		}
	}
}
