package kernels

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// trimCases are convolutions with taps that read only padding: DeepLabV3's
// ASPP (dilation 12 on 4×4 planes: the centre tap alone), a dilated 5×5
// keeping its middle 3×3, pads on one side only, strided, grouped.
var trimCases = []struct {
	name     string
	x, w     []int
	p        ConvParams
	kh, kw   int // the smaller kernel
	ky0, kx0 int
}{
	{"aspp_d12", []int{2, 6, 4, 4}, []int{5, 6, 3, 3}, ConvParams{Dilations: []int{12, 12}, Pads: []int{12, 12, 12, 12}}, 1, 1, 1, 1},
	{"5x5_d2_on_3x3", []int{2, 3, 3, 3}, []int{4, 3, 5, 5}, ConvParams{Dilations: []int{2, 2}, Pads: []int{4, 4, 4, 4}}, 3, 3, 1, 1},
	{"top_only", []int{1, 2, 2, 5}, []int{3, 2, 5, 3}, ConvParams{Pads: []int{3, 1, 0, 1}}, 2, 3, 3, 0},
	{"strided", []int{2, 2, 3, 3}, []int{2, 2, 7, 7}, ConvParams{Strides: []int{2, 2}, Pads: []int{3, 3, 3, 3}}, 5, 5, 1, 1},
	{"grouped", []int{2, 4, 2, 2}, []int{6, 2, 5, 5}, ConvParams{Group: 2, Pads: []int{2, 2, 2, 2}}, 3, 3, 1, 1},
}

// TestConvTrimTaps checks that the convolutions above drop the taps that
// read only padding (trimConv: the expected smaller kernel) and that the
// three passes with the smaller kernel match the whole kernel's, into
// dirty buffers: float64 to 1e-12, float32 to 2e-6 of the terms' scale.
func TestConvTrimTaps(t *testing.T) {
	for _, c := range trimCases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				t.Fatal(err)
			}
			tr := trimConv(&g)
			if tr == nil || tr.g.kh != c.kh || tr.g.kw != c.kw || tr.ky0 != c.ky0 || tr.kx0 != c.kx0 {
				t.Fatalf("%v: trimmed to %+v, expected a %d×%d kernel from tap (%d, %d)", g, tr, c.kh, c.kw, c.ky0, c.kx0)
			}
			rng := rand.New(rand.NewSource(5))
			x, w, b := randTensor(rng, c.x...), randTensor(rng, c.w...), randTensor(rng, g.m)
			gy := randTensor(rng, g.n, g.m, g.oh, g.ow)
			dirty := func(n int) []float64 {
				d := make([]float64, n)
				for i := range d {
					d[i] = 1e6 + float64(i)
				}
				return d
			}
			whole := func(x, w, b, gy tensor.Tensor) [3][]float64 {
				y := convForward(&g, newConvScratch(), x, w, b, make([]float64, g.n*g.m*g.outPlane))
				dx := convGradX(&g, newConvScratch(), w, gy, make([]float64, g.n*g.c*g.inPlane))
				dw := convGradW[float64](g, newConvScratch(), x, gy)
				return [3][]float64{data[float64](y), data[float64](dx), data[float64](dw)}
			}
			trimmed := func(x, w, b, gy tensor.Tensor) [3][]float64 {
				sc := newConvScratch()
				y := trimmedForward(&g, tr, sc, x, w, b, dirty(g.n*g.m*g.outPlane))
				dx := trimmedGradX(&g, tr, sc, w, gy, dirty(g.n*g.c*g.inPlane))
				dw := trimmedGradW(&g, tr, sc, x, gy, dirty(g.m*g.colRows))
				return [3][]float64{data[float64](y), data[float64](dx), data[float64](dw)}
			}
			whole32 := func() [3][]float32 {
				x, w, b, gy := toF32(x), toF32(w), toF32(b), toF32(gy)
				y := convForward(&g, newConvScratch(), x, w, b, make([]float32, g.n*g.m*g.outPlane))
				dx := convGradX(&g, newConvScratch(), w, gy, make([]float32, g.n*g.c*g.inPlane))
				dw := convGradW[float32](g, newConvScratch(), x, gy)
				return [3][]float32{data[float32](y), data[float32](dx), data[float32](dw)}
			}
			trimmed32 := func() [3][]float32 {
				x, w, b, gy := toF32(x), toF32(w), toF32(b), toF32(gy)
				sc := newConvScratch()
				y := trimmedForward(&g, tr, sc, x, w, b, toF32s(dirty(g.n*g.m*g.outPlane)))
				dx := trimmedGradX(&g, tr, sc, w, gy, toF32s(dirty(g.n*g.c*g.inPlane)))
				dw := trimmedGradW(&g, tr, sc, x, gy, toF32s(dirty(g.m*g.colRows)))
				return [3][]float32{data[float32](y), data[float32](dx), data[float32](dw)}
			}
			ref, got := whole(x, w, b, gy), trimmed(x, w, b, gy)
			ref32, got32 := whole32(), trimmed32()
			comparePasses(t, "trimmed", "whole kernel", ref, got, ref32, got32)
		})
	}
}

// TestConvTrimTapsGradFD checks the gradients of Conv with trimmed taps
// (x, w, bias) against float64 central differences, and its float32
// results against float64.
func TestConvTrimTapsGradFD(t *testing.T) {
	for _, c := range trimCases {
		t.Run(c.name, func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil || trimConv(&g) == nil {
				t.Fatalf("%s: no taps trimmed (%v)", c.name, err)
			}
			rng := rand.New(rand.NewSource(11))
			vals := []*tensor.Dense{randTensor(rng, c.x...), randTensor(rng, c.w...), randTensor(rng, g.m)}
			p := c.p
			b := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Conv(in[0], in[1], in[2], p) }
			noteFD(gradCheck(t, vals, []bool{true, true, true}, b))
			checkF32(t, vals, b)
		})
	}
}

// trimGradWCases are trimmed convolutions whose smaller kernel's weight
// gradient runs on each of trimmedGradW's paths: the batched product
// (DeepLabV3's ASPP at dilations 12, 24 and 36: the centre tap of a 3×3
// on 4×4 planes), the depthwise and grouped kernels, and the general one
// (a single sample), with taps kept along one axis only (1×3, 3×1), a
// block in the middle (3×3 of 5×5) and at an edge (2×3 of 5×3).
var trimGradWCases = []struct {
	name string
	x, w []int
	p    ConvParams
}{
	{"aspp_d12", []int{4, 24, 4, 4}, []int{16, 24, 3, 3}, ConvParams{Dilations: []int{12, 12}, Pads: []int{12, 12, 12, 12}}},
	{"aspp_d24", []int{4, 24, 4, 4}, []int{16, 24, 3, 3}, ConvParams{Dilations: []int{24, 24}, Pads: []int{24, 24, 24, 24}}},
	{"aspp_d36_one_sample", []int{1, 24, 4, 4}, []int{16, 24, 3, 3}, ConvParams{Dilations: []int{36, 36}, Pads: []int{36, 36, 36, 36}}},
	{"rows_1x3_of_3x3", []int{3, 5, 1, 6}, []int{7, 5, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
	{"cols_3x1_of_3x5", []int{3, 5, 4, 1}, []int{6, 5, 3, 5}, ConvParams{Pads: []int{1, 2, 1, 2}}},
	{"5x5_d2_on_3x3", []int{2, 3, 3, 3}, []int{4, 3, 5, 5}, ConvParams{Dilations: []int{2, 2}, Pads: []int{4, 4, 4, 4}}},
	{"top_only_one_sample", []int{1, 2, 2, 5}, []int{3, 2, 5, 3}, ConvParams{Pads: []int{3, 1, 0, 1}}},
	{"grouped", []int{2, 4, 2, 2}, []int{6, 2, 5, 5}, ConvParams{Group: 2, Pads: []int{2, 2, 2, 2}}},
	{"depthwise", []int{2, 6, 3, 3}, []int{6, 1, 7, 7}, ConvParams{Group: 6, Pads: []int{3, 3, 3, 3}}},
}

// TestConvTrimGradW checks that the trimmed weight gradient, written into
// a buffer of NaNs with NaN-filled scratch (no path may rely on zeroed
// memory), equals the whole kernel's (what Conv runs with TrimTaps off):
// exact zeros at the dropped taps, the kept taps to 1e-12 in float64 and
// 2e-6 of the scale in float32. The table must reach each of
// trimmedGradW's paths.
func TestConvTrimGradW(t *testing.T) {
	paths := map[string]bool{}
	for _, c := range trimGradWCases {
		t.Run(c.name, func(t *testing.T) {
			g, tr := mustTrim(t, c.x, c.w, c.p)
			switch tg := &tr.g; {
			case depthwiseOK(tg) || groupedOK(tg):
				paths["depthwise or grouped"] = true
			case batchedPlanes(tg) && !winogradOK(tg):
				paths["batched"] = true
			default:
				paths["general"] = true
			}
			rng := rand.New(rand.NewSource(3))
			x, gy := randTensor(rng, c.x...), randTensor(rng, g.n, g.m, g.oh, g.ow)
			want := data[float64](convGradW[float64](g, newConvScratch(), x, gy))
			want32 := data[float32](convGradW[float32](g, newConvScratch(), toF32(x), toF32(gy)))
			poisonScratch[float64](tr.g.m * tr.g.colRows)
			got := data[float64](trimmedGradW(&g, tr, newConvScratch(), x, gy, nanSlice[float64](g.m*g.colRows)))
			poisonScratch[float32](tr.g.m * tr.g.colRows)
			got32 := data[float32](trimmedGradW(&g, tr, newConvScratch(), toF32(x), toF32(gy), nanSlice[float32](g.m*g.colRows)))
			for i, w := range want {
				ky, kx := i/g.kw%g.kh, i%g.kw
				kept := ky >= tr.ky0 && ky < tr.ky0+tr.g.kh && kx >= tr.kx0 && kx < tr.kx0+tr.g.kw
				if !kept {
					if got[i] != 0 || got32[i] != 0 || math.Signbit(got[i]) || math.Signbit(float64(got32[i])) {
						t.Fatalf("dW[%d] (tap %d,%d, dropped): %v, float32 %v; want +0", i, ky, kx, got[i], got32[i])
					}
					continue
				}
				if d := math.Abs(got[i] - w); !(d <= 1e-12*(1+math.Abs(w))) {
					t.Fatalf("float64 dW[%d] (tap %d,%d): trimmed %v, whole kernel %v", i, ky, kx, got[i], w)
				}
				if d := math.Abs(float64(got32[i]) - float64(want32[i])); !(d <= 2e-6*(4+math.Abs(w))) {
					t.Fatalf("float32 dW[%d] (tap %d,%d): trimmed %v, whole kernel %v", i, ky, kx, got32[i], want32[i])
				}
			}
		})
	}
	for _, p := range []string{"batched", "depthwise or grouped", "general"} {
		if !paths[p] {
			t.Errorf("no case runs the %s path of trimmedGradW", p)
		}
	}
}

// poisonScratch fills every free []T buffer of colScratch with NaNs and
// adds one of n NaNs, so a pass that reads scratch it did not write
// yields NaNs.
func poisonScratch[T float](n int) {
	l := &colScratch.pool
	l.mu.Lock()
	for _, f := range l.free {
		if b, ok := f.(*[]T); ok {
			for i := range *b {
				(*b)[i] = T(math.NaN())
			}
		}
	}
	l.mu.Unlock()
	b := nanSlice[T](n)
	l.Put(&b)
}

// BenchmarkConvTrimMoves times the data movement of one of DeepLabV3's
// ASPP convolutions (256 filters of 960×3×3, the centre tap kept, float32):
// the taps copied into the smaller kernel and its gradient spread back.
func BenchmarkConvTrimMoves(b *testing.B) {
	g, err := newConvGeom(tensor.Shape{4, 960, 4, 4}, tensor.Shape{256, 960, 3, 3},
		ConvParams{Dilations: []int{12, 12}, Pads: []int{12, 12, 12, 12}})
	tr := trimConv(&g)
	if err != nil || tr == nil {
		b.Fatalf("%v: no taps trimmed (%v)", g, err)
	}
	w := make([]float32, g.m*g.colRows)
	b.Run("trimWeights", func(b *testing.B) {
		for b.Loop() {
			colScratch.pool.Put(trimWeights(&g, tr, w))
		}
	})
	dt := make([]float32, tr.g.m*tr.g.colRows)
	b.Run("spreadWeights", func(b *testing.B) {
		for b.Loop() {
			spreadWeights(&g, tr, dt, w)
		}
	})
}

// TestConvTrimWeightsChange runs one trimmed Conv op through three steps
// whose weights differ (as an optimizer's step changes them in place, in
// the same buffer): each step's forward pass, two input gradients (two
// tasks) and weight gradient must match the whole kernel's for that
// step's weights, so the smaller kernel's weights the forward pass keeps
// (trimCache) are never those of an earlier step. The input gradients
// must read the kept copy (else the check says nothing about it), and an
// input gradient handed another W buffer (same shape, other values) must
// not.
func TestConvTrimWeightsChange(t *testing.T) {
	for _, c := range trimCases[:2] { // ASPP's centre tap; a 3×3 block of a 5×5
		t.Run(c.name, func(t *testing.T) {
			g, tr := mustTrim(t, c.x, c.w, c.p)
			rng := rand.New(rand.NewSource(17))
			x, w, b := randTensor(rng, c.x...), randTensor(rng, c.w...), randTensor(rng, g.m)
			gys := []*tensor.Dense{randTensor(rng, g.n, g.m, g.oh, g.ow), randTensor(rng, g.n, g.m, g.oh, g.ow)}
			sc := newConvScratch()
			for step := 0; step < 3; step++ {
				if step > 0 { // the optimizer's update, in place
					for i, v := range data[float64](w) {
						data[float64](w)[i] = v - 0.3*rng.NormFloat64()
					}
				}
				ref, got := [3][]float64{}, [3][]float64{}
				ref[0] = data[float64](convForward(&g, newConvScratch(), x, w, b, make([]float64, g.n*g.m*g.outPlane)))
				got[0] = data[float64](trimmedForward(&g, tr, sc, x, w, b, nanSlice[float64](g.n*g.m*g.outPlane)))
				for k, gy := range gys {
					ref[1] = data[float64](convGradX(&g, newConvScratch(), w, gy, make([]float64, g.n*g.c*g.inPlane)))
					kept, release := gradXWeights(&g, tr, data[float64](w))
					cached := &kept[0] == &tr.cache.w.([]float64)[0]
					release()
					if !cached {
						t.Fatalf("step %d, task %d: the input gradient does not read the forward pass's copy of the taps", step, k)
					}
					got[1] = data[float64](trimmedGradX(&g, tr, sc, w, gy, nanSlice[float64](g.n*g.c*g.inPlane)))
					ref[2] = data[float64](convGradW[float64](g, newConvScratch(), x, gy))
					got[2] = data[float64](trimmedGradW(&g, tr, sc, x, gy, nanSlice[float64](g.m*g.colRows)))
					for p, what := range []string{"Y", "dX", "dW"} {
						for i, want := range ref[p] {
							if d := math.Abs(got[p][i] - want); !(d <= 1e-12*(1+math.Abs(want))) {
								t.Fatalf("step %d, task %d: %s[%d] = %v, whole kernel %v", step, k, what, i, got[p][i], want)
							}
						}
					}
				}
				other := randTensor(rng, c.w...) // another buffer: the kept taps are not its own
				want := data[float64](convGradX(&g, newConvScratch(), other, gys[0], make([]float64, g.n*g.c*g.inPlane)))
				dx := data[float64](trimmedGradX(&g, tr, sc, other, gys[0], nanSlice[float64](g.n*g.c*g.inPlane)))
				for i, v := range want {
					if d := math.Abs(dx[i] - v); !(d <= 1e-12*(1+math.Abs(v))) {
						t.Fatalf("step %d: dX for another W [%d] = %v, whole kernel %v", step, i, dx[i], v)
					}
				}
			}
		})
	}
}

// mustTrim returns the geometry of a convolution of input shape x and
// filters w, and its trimmed one, failing t unless some taps are dropped.
func mustTrim(t *testing.T, x, w []int, p ConvParams) (convGeom, *convTrim) {
	t.Helper()
	g, err := newConvGeom(tensor.Shape(x), tensor.Shape(w), p)
	if err != nil {
		t.Fatal(err)
	}
	tr := trimConv(&g)
	if tr == nil {
		t.Fatalf("%v: no taps trimmed", g)
	}
	return g, tr
}
