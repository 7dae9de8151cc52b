package kernels

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// TestConvColCache checks that the weight gradient reading the forward
// pass's cached im2col matrices is bit-for-bit the recomputed one (also
// where the recomputed one would run in bands of rows: colBandElems 1),
// and that a cache made from other input values (another tensor, or the
// same buffer overwritten in place as the TapeMachine does) is not used.
func TestConvColCache(t *testing.T) {
	for _, bands := range []bool{false, true} {
		if bands {
			old := colBandElems
			colBandElems = 1
			defer func() { colBandElems = old }()
		}
		testConvColCache(t, bands)
	}
}

func testConvColCache(t *testing.T, bands bool) {
	cases := []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"pad_stride", []int{3, 2, 7, 6}, []int{4, 2, 3, 3}, ConvParams{Strides: []int{2, 1}, Pads: []int{1, 0, 2, 1}}},
		// strided: stride-1 groups take the grouped path, which keeps no cache
		{"groups", []int{2, 4, 5, 4}, []int{6, 2, 3, 3}, ConvParams{Group: 2, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}}},
	}
	for _, c := range cases {
		name := c.name
		if bands {
			name += "_bands"
		}
		t.Run(name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(2))
			x, w := randTensor(rng, c.x...), randTensor(rng, c.w...)
			gy := randTensor(rng, g.n, g.m, g.oh, g.ow)
			recomputed := func(x tensor.Tensor) []float64 {
				return data[float64](convGradW[float64](g, &scratch{}, x, gy))
			}
			same := func(what string, got, want []float64) {
				t.Helper()
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s: dW[%d] = %v, recomputed %v", what, i, got[i], want[i])
					}
				}
			}
			sc := &scratch{}
			convForward(&g, sc, x, w, nil, make([]float64, g.n*g.m*g.outPlane))
			if !sc.cache.valid {
				t.Fatal("forward pass did not fill the im2col cache")
			}
			for k := 0; k < 2; k++ { // one gradient per task
				same("cached", data[float64](convGradW[float64](g, sc, x, gy)), recomputed(x))
			}
			x2 := randTensor(rng, c.x...)
			same("other input", data[float64](convGradW[float64](g, sc, x2, gy)), recomputed(x2))
			xd := data[float64](x)
			xd[len(xd)/2] += 1 // in place, after the forward pass
			same("overwritten input", data[float64](convGradW[float64](g, sc, x, gy)), recomputed(x))

			limit := colCacheLimit
			colCacheLimit = 0
			defer func() { colCacheLimit = limit }()
			sc0 := &scratch{}
			convForward(&g, sc0, x, w, nil, make([]float64, g.n*g.m*g.outPlane))
			if sc0.cache.valid || sc0.cache.col != nil {
				t.Error("ColCacheLimit 0: the forward pass kept im2col matrices")
			}
		})
	}
}
