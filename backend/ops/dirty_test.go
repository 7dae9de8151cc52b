package ops

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

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
			rnd := func(s []int) tensor.Tensor {
				d := make([]float32, tensor.Shape(s).TotalSize())
				for i := range d {
					d[i] = float32(r.NormFloat64())
				}
				return newTensor(tensor.Shape(s), d)
			}
			x, w, b := rnd(c.x), rnd(c.w), rnd([]int{c.w[0]})
			n := g.n * g.m * g.outPlane
			want := data[float32](convForward(g, newConvScratch(), x, w, b, make([]float32, n)))
			dirty := make([]float32, n)
			for i := range dirty {
				dirty[i] = float32(math.NaN())
			}
			got := data[float32](convForward(g, newConvScratch(), x, w, b, dirty))
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("element %d: %v into a dirty buffer, %v into a zeroed one", i, got[i], want[i])
				}
			}
		})
	}
}
