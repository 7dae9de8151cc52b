package kernels

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// TestConvBands checks that a convolution formed in bands of output rows
// (colBandElems small; the weight gradient's bands of bandCacheElems, see
// gradWBandRows) gives the forward pass and both gradients of the
// whole-matrix one to float64 round-off.
func TestConvBands(t *testing.T) {
	cases := []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"3x3_pad", []int{2, 3, 9, 7}, []int{4, 3, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"stride_dil", []int{3, 2, 11, 8}, []int{5, 2, 3, 2}, ConvParams{Strides: []int{2, 1}, Dilations: []int{2, 1}, Pads: []int{2, 0, 1, 1}}},
		{"groups_1sample", []int{1, 4, 6, 5}, []int{6, 2, 3, 3}, ConvParams{Group: 2, Pads: []int{1, 1, 1, 1}}},
	}
	limit, total, planes := colBandElems, colCacheTotal, batchPlaneMax
	defer func() { colBandElems, colCacheTotal, batchPlaneMax = limit, total, planes }()
	colCacheTotal = 0 // the weight gradient recomputes, in bands
	batchPlaneMax = 0 // small planes too run per sample, in bands
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(3))
			x, w := randTensor(rng, c.x...), randTensor(rng, c.w...)
			b := randTensor(rng, g.m)
			gy := randTensor(rng, g.n, g.m, g.oh, g.ow)
			run := func(band int) [3][]float64 {
				colBandElems = band
				if got := g.bandRows(); band == 1 && got != 1 {
					t.Fatalf("ColBandElems 1: %d rows per band, expected 1", got)
				}
				y := convForward(&g, &scratch{}, x, w, b, make([]float64, g.n*g.m*g.outPlane))
				dx := convGradX(&g, &scratch{}, w, gy, make([]float64, g.n*g.c*g.inPlane))
				dw := convGradW[float64](g, &scratch{}, x, gy)
				return [3][]float64{data[float64](y), data[float64](dx), data[float64](dw)}
			}
			whole, banded := run(1<<30), run(1)
			// The weight gradient's bands of bandCacheElems: two output
			// rows each, and a last band of one when oH is odd.
			cache, minCols := bandCacheElems, gradWMinCols
			colBandElems, bandCacheElems, gradWMinCols = 1<<30, 2*g.colRows*g.ow, 1
			if got := g.gradWBandRows(); got != 2 {
				t.Fatalf("weight gradient bands of %d rows, expected 2", got)
			}
			two := run(1 << 30)
			bandCacheElems, gradWMinCols = cache, minCols
			for k, what := range []string{"Y", "dX", "dW"} {
				for i, want := range whole[k] {
					if got := banded[k][i]; math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
						t.Fatalf("%s[%d]: banded %v, whole %v", what, i, got, want)
					}
					if got := two[k][i]; math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
						t.Fatalf("%s[%d]: in bands of two rows %v, whole %v", what, i, got, want)
					}
				}
			}
		})
	}
}
