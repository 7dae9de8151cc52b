package kernels

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// dwCases are depthwise geometries of MobileNetV3, EfficientNet and
// ConvNeXt (3×3, 5×5, 7×7; strides 1 and 2; "same" pads, odd planes,
// asymmetric pads, planes smaller than the kernel).
var dwCases = []struct {
	name string
	x    []int
	k    int
	p    ConvParams
}{
	{"3x3_s1", []int{2, 5, 9, 8}, 3, ConvParams{Pads: []int{1, 1, 1, 1}}},
	{"3x3_s2", []int{2, 4, 9, 10}, 3, ConvParams{Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}}},
	{"5x5_s1", []int{3, 3, 7, 6}, 5, ConvParams{Pads: []int{2, 2, 2, 2}}},
	{"5x5_s2", []int{2, 3, 11, 11}, 5, ConvParams{Strides: []int{2, 2}, Pads: []int{2, 2, 2, 2}}},
	{"7x7_s1", []int{2, 6, 8, 8}, 7, ConvParams{Pads: []int{3, 3, 3, 3}}},
	{"7x7_s1_tiny", []int{4, 3, 2, 2}, 7, ConvParams{Pads: []int{3, 3, 3, 3}}},
	{"7x7_s2_asym", []int{1, 2, 13, 9}, 7, ConvParams{Strides: []int{2, 2}, Pads: []int{3, 2, 1, 3}}},
	{"3x3_nopad", []int{2, 2, 6, 7}, 3, ConvParams{}},
	{"3x3_s2_same_upper", []int{2, 3, 8, 8}, 3, ConvParams{Strides: []int{2, 2}, AutoPad: "SAME_UPPER"}},
	// dilated (DeepLabV3's 5×5, dilation 2 on 4×4 planes): direct loops only
	{"5x5_dil2_4x4", []int{2, 3, 4, 4}, 5, ConvParams{Dilations: []int{2, 2}, Pads: []int{4, 4, 4, 4}}},
	{"3x3_dil2_s2_asym", []int{2, 2, 7, 6}, 3, ConvParams{Strides: []int{2, 2}, Dilations: []int{2, 3}, Pads: []int{1, 2, 2, 0}}},
}

// dilated reports whether p has a dilation above 1 (the phase planes do
// not take it).
func dilated(p ConvParams) bool {
	for _, d := range p.Dilations {
		if d > 1 {
			return true
		}
	}
	return false
}

// TestConvDepthwiseMatchesIm2col checks the depthwise path (convdw.go)
// against the im2col path on the same geometry, all three passes, with
// bias, into dirty output buffers: float64 to 1e-12, float32 to 2e-6 of
// the sums of absolute terms' scale.
func TestConvDepthwiseMatchesIm2col(t *testing.T) {
	defer func(m int) { depthwiseOn, dwDirectMaxPlane, groupedOn = true, m, true }(dwDirectMaxPlane)
	groupedOn = false // the reference: im2col per sample and group
	for _, c := range dwCases {
		for _, direct := range dwPaths {
			if direct.maxPlane == 0 && dilated(c.p) {
				continue
			}
			dwDirectMaxPlane = direct.maxPlane
			t.Run(c.name+"/"+direct.name, func(t *testing.T) {
				C := c.x[1]
				p := c.p
				p.Group = C
				ws := []int{C, 1, c.k, c.k}
				g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(ws), p)
				if err != nil {
					t.Fatal(err)
				}
				depthwiseOn = true
				if !depthwiseOK(&g) {
					t.Fatalf("%v: the depthwise path does not apply", g)
				}
				rng := rand.New(rand.NewSource(3))
				x, w, b := randTensor(rng, c.x...), randTensor(rng, ws...), randTensor(rng, C)
				gy := randTensor(rng, g.n, g.m, g.oh, g.ow)
				dirty := func(n int) []float64 {
					d := make([]float64, n)
					for i := range d {
						d[i] = 1e6 + float64(i)
					}
					return d
				}
				run64 := func(on bool) [3][]float64 {
					depthwiseOn = on
					sc := newConvScratch()
					y := convForward(&g, sc, x, w, b, dirty(g.n*g.m*g.outPlane))
					dx := convGradX(&g, sc, w, gy, dirty(g.n*g.c*g.inPlane))
					dwBuf := make([]float64, g.m*g.colRows) // convGradWInto adds into zeros
					if on {
						dwBuf = dirty(len(dwBuf)) // the depthwise path writes every element
					}
					dw := convGradWInto(&g, sc, x, gy, dwBuf)
					return [3][]float64{data[float64](y), data[float64](dx), data[float64](dw)}
				}
				x32, w32, b32, gy32 := toF32(x), toF32(w), toF32(b), toF32(gy)
				run32 := func(on bool) [3][]float32 {
					depthwiseOn = on
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
				comparePasses(t, "depthwise", "im2col", ref, got, ref32, got32)
			})
		}
	}
}

// dwPaths runs the depthwise tests on the phase planes (convdw.go) and on
// the direct loops (convdwsmall.go) for every case.
var dwPaths = []struct {
	name     string
	maxPlane int
}{{"phase", 0}, {"direct", 1 << 30}}

func toF32s(x []float64) []float32 {
	r := make([]float32, len(x))
	for i, v := range x {
		r[i] = float32(v)
	}
	return r
}

// TestConvDepthwiseGradFD checks the depthwise path's gradients (x, w,
// bias) against float64 central differences, strides 1 and 2, and its
// float32 results against float64.
func TestConvDepthwiseGradFD(t *testing.T) {
	defer func(m int) { dwDirectMaxPlane = m }(dwDirectMaxPlane)
	for _, c := range dwCases {
		for _, direct := range dwPaths {
			if direct.maxPlane == 0 && dilated(c.p) {
				continue
			}
			dwDirectMaxPlane = direct.maxPlane
			t.Run(c.name+"/"+direct.name, func(t *testing.T) {
				C := c.x[1]
				p := c.p
				p.Group = C
				ws := []int{C, 1, c.k, c.k}
				g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(ws), p)
				if err != nil || !depthwiseOK(&g) {
					t.Fatalf("%s: the depthwise path does not apply (%v)", c.name, err)
				}
				rng := rand.New(rand.NewSource(8))
				vals := []*tensor.Dense{randTensor(rng, c.x...), randTensor(rng, ws...), randTensor(rng, C)}
				b := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Conv(in[0], in[1], in[2], p) }
				noteFD(gradCheck(t, vals, []bool{true, true, true}, b))
				checkF32(t, vals, b)
			})
		}
	}
}

// BenchmarkConvDepthwise times the three passes of the depthwise layers of
// MobileNetV3-Small and ConvNeXt-T at 64×64 input (batch 4), on the
// depthwise path and through im2col, side by side.
func BenchmarkConvDepthwise(b *testing.B) {
	shapes := []struct {
		x    []int
		k, s int
	}{
		{[]int{4, 16, 16, 16}, 3, 2}, {[]int{4, 72, 16, 16}, 3, 2}, {[]int{4, 88, 8, 8}, 3, 1},
		{[]int{4, 96, 8, 8}, 5, 2}, {[]int{4, 240, 4, 4}, 5, 1}, {[]int{4, 576, 2, 2}, 5, 1},
		{[]int{4, 96, 16, 16}, 7, 1}, {[]int{4, 192, 8, 8}, 7, 1}, {[]int{4, 384, 4, 4}, 7, 1}, {[]int{4, 768, 2, 2}, 7, 1},
	}
	defer func() { depthwiseOn, groupedOn = true, true }()
	groupedOn = false // im2col per sample and group
	for _, s := range shapes {
		C := s.x[1]
		p := ConvParams{Group: C, Strides: []int{s.s, s.s}, Pads: []int{s.k / 2, s.k / 2, s.k / 2, s.k / 2}}
		g, err := newConvGeom(tensor.Shape(s.x), tensor.Shape{C, 1, s.k, s.k}, p)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewSource(1))
		x, w, gy := toF32(randTensor(rng, s.x...)), toF32(randTensor(rng, C, 1, s.k, s.k)), toF32(randTensor(rng, g.n, g.m, g.oh, g.ow))
		y, dx, dw := make([]float32, g.n*g.m*g.outPlane), make([]float32, g.n*g.c*g.inPlane), make([]float32, g.m*g.colRows)
		for _, on := range []bool{true, false} {
			path := "depthwise"
			if !on {
				path = "im2col"
			}
			b.Run(fmt.Sprintf("%v_k%d_s%d/%s", s.x, s.k, s.s, path), func(b *testing.B) {
				depthwiseOn = on
				sc := newConvScratch()
				for i := 0; i < b.N; i++ {
					convForward(&g, sc, x, w, nil, y)
					convGradX(&g, sc, w, gy, dx)
					clear(dw)
					convGradWInto(&g, sc, x, gy, dw)
				}
				b.ReportMetric(float64(3*2*g.n*g.m*g.outPlane*s.k*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkConvDepthwiseSmall times the three passes of the depthwise
// layers of EfficientNet-B0 and MobileNetV3 at 64×64 input (batch 4) with
// outputs of 8×8 and smaller, on the phase planes and on the direct loops,
// side by side (dwDirectMaxPlane picks between them).
func BenchmarkConvDepthwiseSmall(b *testing.B) {
	shapes := []struct {
		x    []int
		k, s int
	}{
		{[]int{4, 240, 8, 8}, 5, 1}, {[]int{4, 240, 8, 8}, 3, 2}, {[]int{4, 480, 4, 4}, 3, 1}, {[]int{4, 672, 4, 4}, 5, 1},
		{[]int{4, 672, 4, 4}, 5, 2}, {[]int{4, 1152, 2, 2}, 5, 1}, {[]int{4, 1152, 2, 2}, 3, 1},
	}
	defer func(m int) { dwDirectMaxPlane = m }(dwDirectMaxPlane)
	for _, s := range shapes {
		C := s.x[1]
		p := ConvParams{Group: C, Strides: []int{s.s, s.s}, Pads: []int{s.k / 2, s.k / 2, s.k / 2, s.k / 2}}
		g, err := newConvGeom(tensor.Shape(s.x), tensor.Shape{C, 1, s.k, s.k}, p)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewSource(1))
		x, w, gy := toF32(randTensor(rng, s.x...)), toF32(randTensor(rng, C, 1, s.k, s.k)), toF32(randTensor(rng, g.n, g.m, g.oh, g.ow))
		y, dx, dw := make([]float32, g.n*g.m*g.outPlane), make([]float32, g.n*g.c*g.inPlane), make([]float32, g.m*g.colRows)
		for _, path := range dwPaths {
			b.Run(fmt.Sprintf("%v_k%d_s%d/%s", s.x, s.k, s.s, path.name), func(b *testing.B) {
				dwDirectMaxPlane = path.maxPlane
				sc := newConvScratch()
				for i := 0; i < b.N; i++ {
					convForward(&g, sc, x, w, nil, y)
					convGradX(&g, sc, w, gy, dx)
					convGradWInto(&g, sc, x, gy, dw)
				}
			})
		}
	}
}
