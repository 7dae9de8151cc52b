package kernels

import (
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/internal/par"
	"gorgonia.org/tensor"
)

// TestSmallConvStaysOnCaller checks, on 16 threads, that the three passes
// of a convolution whose products are under two chunks of minProductWork
// hand no loop to the pool's workers (waking one costs more than such a
// convolution), for each of the per-sample paths (im2col bands, wide
// rows, grouped, padded wide rows, 1×1, small planes included; a 1×1
// over 16×16 planes of 24 channels, ShuffleNet's, is above minChunkWork
// a sample), and that a large one of the same kind does hand loops over,
// so that the counter is seen to move.
func TestSmallConvStaysOnCaller(t *testing.T) {
	defer setProcs(16)()
	defer func(b int) { batchPlaneMax = b }(batchPlaneMax)
	batchPlaneMax = 0 // small planes too run per sample, the loops under test
	cases := []struct {
		name  string
		x, w  []int
		p     ConvParams
		large bool
	}{
		{"im2col_3x3_s2", []int{4, 3, 9, 9}, []int{4, 3, 3, 3}, ConvParams{Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}}, false},
		{"wide_5x5", []int{2, 2, 10, 10}, []int{3, 2, 5, 5}, ConvParams{}, false},
		{"grouped_3x3", []int{2, 8, 6, 6}, []int{8, 4, 3, 3}, ConvParams{Group: 2, Pads: []int{1, 1, 1, 1}}, false},
		{"padded_3x3", []int{2, 2, 8, 8}, []int{2, 2, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}, false},
		{"pointwise", []int{4, 8, 4, 4}, []int{8, 8, 1, 1}, ConvParams{}, false},
		{"pointwise_16x16", []int{4, 24, 16, 16}, []int{24, 24, 1, 1}, ConvParams{}, false},
		{"grouped_16x16", []int{4, 16, 16, 16}, []int{16, 4, 3, 3}, ConvParams{Group: 4, Pads: []int{1, 1, 1, 1}}, false},
		{"im2col_3x3_s2_large", []int{32, 16, 33, 33}, []int{32, 16, 3, 3}, ConvParams{Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}}, true},
		{"wide_5x5_large", []int{32, 8, 28, 28}, []int{16, 8, 5, 5}, ConvParams{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			if work := g.n * g.m * g.colRows * g.outPlane; !c.large && work >= 2*minProductWork {
				t.Fatalf("case not small: %d multiply-adds", work)
			}
			if winogradOK(&g) {
				t.Fatalf("%v: takes the Winograd path, not a per-sample one", g)
			}
			rng := rand.New(rand.NewSource(5))
			x, w := toF32(randTensor(rng, c.x...)), toF32(randTensor(rng, c.w...))
			gy := toF32(randTensor(rng, g.n, g.m, g.oh, g.ow))
			sc := newConvScratch()
			before := par.Posted()
			convForward(&g, sc, x, w, nil, make([]float32, g.n*g.m*g.outPlane))
			convGradX(&g, sc, w, gy, make([]float32, g.n*g.c*g.inPlane))
			convGradWInto(&g, sc, x, gy, make([]float32, g.m*g.colRows))
			posted := par.Posted() - before
			if c.large && posted == 0 {
				t.Fatalf("%v: a large convolution's passes posted no loop", g)
			}
			if !c.large && posted != 0 {
				t.Fatalf("%v: %d multiply-adds per pass posted %d loops to the workers, want none", g, g.n*g.m*g.colRows*g.outPlane, posted)
			}
		})
	}
}
