package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestMaxPoolPlaneMatchesScan checks that maxPoolPlane, whose windows
// inside the plane take the maximum and then the first tap equal to it,
// picks for every window the index the scan (maxPoolWindow) picks: ties,
// +0 beside −0, NaNs (one or several in a window), infinities; strides,
// dilations, padding on either side, windows wider than the stride and
// planes with no inside window at all.
func TestMaxPoolPlaneMatchesScan(t *testing.T) {
	geoms := []struct {
		h, w, k, s, d, pb, pe int
	}{
		{32, 32, 3, 2, 1, 1, 1}, // ShuffleNet's and ResNet's stem
		{9, 11, 3, 2, 1, 1, 0},
		{8, 8, 3, 1, 1, 1, 1},
		{10, 7, 2, 1, 2, 0, 1},
		{12, 12, 5, 3, 1, 2, 2},
		{3, 3, 3, 1, 1, 1, 1},
		{2, 2, 3, 1, 1, 1, 1}, // no window inside the plane
		{7, 9, 2, 2, 1, 0, 0},
	}
	r := rand.New(rand.NewSource(9))
	kinds := []struct {
		name string
		val  func() float32
	}{
		{"ties", func() float32 { return float32(r.Intn(3)) }},
		{"signed zeros", func() float32 { return float32(math.Copysign(0, r.Float64()-0.5)) }},
		{"nans", func() float32 {
			switch u := r.Float64(); {
			case u < 0.15:
				return float32(math.NaN())
			case u < 0.25:
				return float32(math.Inf(-1))
			case u < 0.3:
				return float32(math.Inf(1))
			}
			return float32(r.NormFloat64())
		}},
		{"normal", func() float32 { return float32(r.NormFloat64()) }},
	}
	for _, c := range geoms {
		oh := (c.h+c.pb+c.pe-(c.k-1)*c.d-1)/c.s + 1
		ow := (c.w+c.pb+c.pe-(c.k-1)*c.d-1)/c.s + 1
		g := poolGeom{n: 1, c: 1, h: c.h, w: c.w, oh: oh, ow: ow,
			y: window{k: c.k, s: c.s, d: c.d, pb: c.pb, pe: c.pe}, x: window{k: c.k, s: c.s, d: c.d, pb: c.pb, pe: c.pe}}
		for _, kind := range kinds {
			t.Run(fmt.Sprintf("%dx%d_k%d_s%d_d%d_p%d%d/%s", c.h, c.w, c.k, c.s, c.d, c.pb, c.pe, kind.name), func(t *testing.T) {
				for trial := 0; trial < 20; trial++ {
					x := make([]float32, c.h*c.w)
					for i := range x {
						x[i] = kind.val()
					}
					got := make([]int64, oh*ow)
					if err := maxPoolPlane(g, x, got, 7); err != nil {
						t.Fatal(err)
					}
					for oi := 0; oi < oh; oi++ {
						for oj := 0; oj < ow; oj++ {
							want, _ := maxPoolWindow(&g, x, oi, oj)
							if got[oi*ow+oj] != int64(7+want) {
								t.Fatalf("trial %d window (%d,%d): index %d, the scan's %d", trial, oi, oj, got[oi*ow+oj]-7, want)
							}
						}
					}
				}
			})
		}
	}
}

// BenchmarkMaxPool3x3 times the indices of a 3×3 stride-2 max pooling of
// padding 1 (ShuffleNetV2's and ResNet's stem) over 4 × 24 planes of
// 32×32 (ShuffleNetV2 ×0.5 at 64×64, batch 4), one thread's share.
func BenchmarkMaxPool3x3(b *testing.B) {
	g := poolGeom{n: 1, c: 1, h: 32, w: 32, oh: 16, ow: 16,
		y: window{k: 3, s: 2, d: 1, pb: 1, pe: 1}, x: window{k: 3, s: 2, d: 1, pb: 1, pe: 1}}
	r := rand.New(rand.NewSource(1))
	const planes = 96
	x := make([]float32, planes*g.h*g.w)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	idx := make([]int64, g.oh*g.ow)
	for range b.N {
		for p := 0; p < planes; p++ {
			if err := maxPoolPlane(g, x[p*g.h*g.w:][:g.h*g.w], idx, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
}
