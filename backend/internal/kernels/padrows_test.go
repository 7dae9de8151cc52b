package kernels

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// TestPadRowsGapsOnce checks padRows over several gradients spread one
// after another into one dirty buffer, the gaps cleared by the first
// only: each spread equals the spread into a zeroed buffer, for LeNet's
// geometries and others (rows wideLen and wideLd apart).
func TestPadRowsGapsOnce(t *testing.T) {
	cases := []struct {
		name string
		x, w []int
	}{
		{"lenet_9x9_36", []int{1, 1, 36, 36}, []int{4, 1, 9, 9}},
		{"lenet_5x5_14", []int{1, 3, 14, 14}, []int{5, 3, 5, 5}},
		{"3x3_odd", []int{1, 2, 7, 11}, []int{3, 2, 3, 3}},
		{"1_row_out", []int{1, 1, 3, 8}, []int{2, 1, 3, 3}},
	}
	rng := rand.New(rand.NewSource(2))
	for _, c := range cases {
		g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), ConvParams{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []int{g.wideLen(), g.wideLd()} {
			pad := make([]float32, g.mg*l)
			for i := range pad {
				pad[i] = 99
			}
			for k := 0; k < 3; k++ {
				gy := make([]float32, g.mg*g.outPlane)
				for i := range gy {
					gy[i] = float32(rng.NormFloat64())
				}
				want := make([]float32, g.mg*l)
				padRows(&g, gy, want, l, true)
				padRows(&g, gy, pad, l, k == 0)
				for m := 0; m < g.mg; m++ {
					for j := 0; j < g.wideLen(); j++ {
						if got, w := pad[m*l+j], want[m*l+j]; got != w {
							t.Fatalf("%s, rows %d apart, gradient %d: row %d value %d is %v, want %v", c.name, l, k, m, j, got, w)
						}
					}
				}
			}
		}
	}
}
