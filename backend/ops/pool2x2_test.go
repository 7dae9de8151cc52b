package ops

import (
	"math"
	"math/rand"
	"testing"
)

// TestMaxPool2x2MatchesGeneral checks that the 2×2 fast path picks the
// same indices as the general window loop, with ties, NaNs (first, later
// and several in a window), infinities and odd plane sizes.
func TestMaxPool2x2MatchesGeneral(t *testing.T) {
	cases := []struct {
		name string
		h, w int
		pNaN float64
	}{
		{"even", 8, 8, 0},
		{"odd", 7, 9, 0},
		{"nans", 6, 6, 0.3},
		{"mostly nan", 5, 8, 0.8},
		{"lenet", 28, 28, 0.05},
	}
	r := rand.New(rand.NewSource(3))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := poolGeom{n: 1, c: 1, h: c.h, w: c.w, oh: c.h / 2, ow: c.w / 2,
				y: window{k: 2, s: 2, d: 1}, x: window{k: 2, s: 2, d: 1}}
			if !g.is2x2() {
				t.Fatalf("%v: not a 2x2 geometry", g)
			}
			for trial := 0; trial < 50; trial++ {
				x := make([]float32, c.h*c.w)
				for i := range x {
					switch u := r.Float64(); {
					case u < c.pNaN:
						x[i] = float32(math.NaN())
					case u < c.pNaN+0.05:
						x[i] = float32(math.Inf(-1))
					default:
						x[i] = float32(r.Intn(4)) // ties
					}
				}
				got := make([]int64, g.oh*g.ow)
				want := make([]int64, g.oh*g.ow)
				maxPool2x2(x, got, g.w, g.oh, g.ow, 100)
				if err := maxPoolPlane(g, x, want, 100); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("trial %d window %d: index %d, general loop %d (x %v)", trial, i, got[i], want[i], x)
					}
				}
			}
		})
	}
}
