package kernels

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// groupCases are grouped, not depthwise, geometries of the grouped path
// (stride 1): RegNetX and ResNeXt 3×3, filters per group unlike channels
// per group, 5×5, odd and asymmetric pads, a single sample, 2×2 planes,
// dilation, a padded 1×1.
var groupCases = []struct {
	name string
	x, w []int
	p    ConvParams
}{
	{"3x3_s1_g2", []int{2, 8, 6, 7}, []int{8, 4, 3, 3}, ConvParams{Group: 2, Pads: []int{1, 1, 1, 1}}},
	{"3x3_g4_odd", []int{3, 16, 9, 8}, []int{16, 4, 3, 3}, ConvParams{Group: 4, Pads: []int{1, 1, 1, 1}}},
	{"3x3_s1_g3_m6", []int{2, 6, 5, 5}, []int{12, 2, 3, 3}, ConvParams{Group: 3, Pads: []int{1, 1, 1, 1}}},
	{"5x5_s1_g2", []int{2, 4, 7, 6}, []int{6, 2, 5, 5}, ConvParams{Group: 2, Pads: []int{2, 2, 2, 2}}},
	{"3x3_asym_g2", []int{1, 4, 7, 9}, []int{4, 2, 3, 3}, ConvParams{Group: 2, Pads: []int{0, 1, 2, 1}}},
	{"3x3_2x2_g5", []int{4, 10, 2, 2}, []int{10, 2, 3, 3}, ConvParams{Group: 5, Pads: []int{1, 1, 1, 1}}},
	{"3x3_dil2_g2", []int{2, 4, 8, 8}, []int{4, 2, 3, 3}, ConvParams{Group: 2, Dilations: []int{2, 2}, Pads: []int{2, 2, 2, 2}}},
	{"1x1_pad_g4", []int{2, 8, 6, 6}, []int{8, 2, 1, 1}, ConvParams{Group: 4, Pads: []int{1, 0, 0, 1}}},
}

// TestConvGroupedMatchesIm2col checks the grouped path (convgroup.go)
// against the per-sample, per-group im2col path on the same geometry, all
// three passes, with bias, into dirty output buffers, on 1, 2 and 5
// threads (the units of work change with the threads): float64 to
// 1e-12, float32 to 2e-6 of the terms' scale.
func TestConvGroupedMatchesIm2col(t *testing.T) {
	defer func(c int) { groupedOn, groupedMaxCols = true, c }(groupedMaxCols)
	groupedMaxCols = 1 << 30 // every case, whatever its size
	for _, c := range groupCases {
		for _, procs := range []int{1, 2, 5} {
			t.Run(fmt.Sprintf("%s/%d", c.name, procs), func(t *testing.T) {
				defer setProcs(procs)()
				g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
				if err != nil {
					t.Fatal(err)
				}
				groupedOn = true
				if !groupedOK(&g) {
					t.Fatalf("%v: the grouped path does not apply", g)
				}
				rng := rand.New(rand.NewSource(4))
				x, w, b := randTensor(rng, c.x...), randTensor(rng, c.w...), randTensor(rng, g.m)
				gy := randTensor(rng, g.n, g.m, g.oh, g.ow)
				dirty := func(n int) []float64 {
					d := make([]float64, n)
					for i := range d {
						d[i] = 1e6 + float64(i)
					}
					return d
				}
				run64 := func(on bool) [3][]float64 {
					groupedOn = on
					sc := newConvScratch()
					y := convForward(&g, sc, x, w, b, dirty(g.n*g.m*g.outPlane))
					dx := convGradX(&g, sc, w, gy, dirty(g.n*g.c*g.inPlane))
					dwBuf := make([]float64, g.m*g.colRows) // convGradWInto adds into zeros
					if on {
						dwBuf = dirty(len(dwBuf)) // the grouped path writes every element
					}
					dw := convGradWInto(&g, sc, x, gy, dwBuf)
					return [3][]float64{data[float64](y), data[float64](dx), data[float64](dw)}
				}
				x32, w32, b32, gy32 := toF32(x), toF32(w), toF32(b), toF32(gy)
				run32 := func(on bool) [3][]float32 {
					groupedOn = on
					sc := newConvScratch()
					y := convForward(&g, sc, x32, w32, b32, toF32s(dirty(g.n*g.m*g.outPlane)))
					dx := convGradX(&g, sc, w32, gy32, toF32s(dirty(g.n*g.c*g.inPlane)))
					dwBuf := make([]float32, g.m*g.colRows)
					if on {
						dwBuf = toF32s(dirty(len(dwBuf)))
					}
					dw := convGradWInto(&g, sc, x32, gy32, dwBuf)
					return [3][]float32{data[float32](y), data[float32](dx), data[float32](dw)}
				}
				ref, got := run64(false), run64(true)
				ref32, got32 := run32(false), run32(true)
				comparePasses(t, "grouped", "im2col", ref, got, ref32, got32)
			})
		}
	}
}

// TestConvGroupedGradFD checks the grouped path's gradients (x, w, bias)
// against float64 central differences and its float32 results against
// float64.
func TestConvGroupedGradFD(t *testing.T) {
	defer func(c int) { groupedMaxCols = c }(groupedMaxCols)
	groupedMaxCols = 1 << 30
	for _, c := range groupCases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil || !groupedOK(&g) {
				t.Fatalf("%s: the grouped path does not apply (%v)", c.name, err)
			}
			rng := rand.New(rand.NewSource(9))
			vals := []*tensor.Dense{randTensor(rng, c.x...), randTensor(rng, c.w...), randTensor(rng, g.m)}
			p := c.p
			b := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Conv(in[0], in[1], in[2], p) }
			noteFD(gradCheck(t, vals, []bool{true, true, true}, b))
			checkF32(t, vals, b)
		})
	}
}

// BenchmarkConvGrouped times the three passes of the grouped 3×3 layers
// of RegNetX-400MF (16 channels per group) at 64×64 input and of a
// ResNeXt-style block (32 groups of 4 and of 8 channels), batch 4, on the
// grouped path (whatever groupedMaxCols says) and per sample and group
// (im2col, or wide rows for stride-1 padded layers), side by side. Under
// load compare CPU time, one sub-benchmark per process.
func BenchmarkConvGrouped(b *testing.B) {
	shapes := []struct {
		x      []int
		group  int
		stride int
	}{
		{[]int{4, 32, 32, 32}, 2, 2}, {[]int{4, 64, 16, 16}, 4, 2}, {[]int{4, 64, 8, 8}, 4, 1},
		{[]int{4, 160, 8, 8}, 10, 2}, {[]int{4, 160, 4, 4}, 10, 1}, {[]int{4, 400, 4, 4}, 25, 2},
		{[]int{4, 400, 2, 2}, 25, 1}, {[]int{4, 128, 16, 16}, 32, 1}, {[]int{4, 256, 8, 8}, 32, 1},
	}
	defer func(c int) { groupedOn, groupedMaxCols = true, c }(groupedMaxCols)
	groupedMaxCols = 1 << 30
	for _, s := range shapes {
		C := s.x[1]
		ws := []int{C, C / s.group, 3, 3}
		p := ConvParams{Group: s.group, Strides: []int{s.stride, s.stride}, Pads: []int{1, 1, 1, 1}}
		g, err := newConvGeom(tensor.Shape(s.x), tensor.Shape(ws), p)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewSource(1))
		x, w, gy := toF32(randTensor(rng, s.x...)), toF32(randTensor(rng, ws...)), toF32(randTensor(rng, g.n, g.m, g.oh, g.ow))
		y, dx, dw := make([]float32, g.n*g.m*g.outPlane), make([]float32, g.n*g.c*g.inPlane), make([]float32, g.m*g.colRows)
		for _, on := range []bool{true, false} {
			path := "grouped"
			if !on {
				path = "im2col"
			}
			b.Run(fmt.Sprintf("%v_g%d_s%d/%s", s.x, s.group, s.stride, path), func(b *testing.B) {
				groupedOn = on
				sc := newConvScratch()
				for i := 0; i < b.N; i++ {
					convForward(&g, sc, x, w, nil, y)
					convGradX(&g, sc, w, gy, dx)
					clear(dw)
					convGradWInto(&g, sc, x, gy, dw)
				}
				b.ReportMetric(float64(3*2*g.n*g.m*g.outPlane*g.colRows)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// setProcs sets GOMAXPROCS to n and returns the function restoring it.
func setProcs(n int) func() {
	old := runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(old) }
}
