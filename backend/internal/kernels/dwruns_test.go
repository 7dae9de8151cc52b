package kernels

import (
	"slices"
	"testing"

	"gorgonia.org/tensor"
)

// TestDwRunsOfCached checks that dwRunsOf gives each small depthwise
// geometry the runs dwRuns makes, the same slice on a second call
// (made once), and different runs for geometries that differ only in a
// field the key holds (stride, dilation, pad, plane).
func TestDwRunsOfCached(t *testing.T) {
	cases := []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"3x3_s1_p1_4x4", []int{2, 8, 4, 4}, []int{8, 1, 3, 3}, ConvParams{Group: 8, Pads: []int{1, 1, 1, 1}}},
		{"3x3_s2_p1_4x4", []int{2, 8, 4, 4}, []int{8, 1, 3, 3}, ConvParams{Group: 8, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}}},
		{"5x5_s1_p2_2x2", []int{1, 4, 2, 2}, []int{4, 1, 5, 5}, ConvParams{Group: 4, Pads: []int{2, 2, 2, 2}}},
		{"5x5_dil2_4x4", []int{1, 4, 4, 4}, []int{4, 1, 5, 5}, ConvParams{Group: 4, Dilations: []int{2, 2}, Pads: []int{4, 4, 4, 4}}},
		{"3x3_asym_3x4", []int{1, 4, 3, 4}, []int{4, 1, 3, 3}, ConvParams{Group: 4, Pads: []int{0, 1, 2, 1}}},
	}
	seen := map[string][]dwRun{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			if !depthwiseOK(&g) || !dwDirect(&g) {
				t.Fatalf("%v: not a small depthwise convolution", g)
			}
			first, again, fresh := dwRunsOf(&g), dwRunsOf(&g), dwRuns(&g)
			if !slices.Equal(first, fresh) {
				t.Fatalf("cached runs %v, dwRuns %v", first, fresh)
			}
			if len(first) == 0 || &first[0] != &again[0] {
				t.Fatal("second call made the runs again")
			}
			for name, rs := range seen {
				if slices.Equal(rs, first) {
					t.Errorf("same runs as %s", name)
				}
			}
			seen[c.name] = first
		})
	}
}
