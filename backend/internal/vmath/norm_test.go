package vmath

import (
	"math"
	"math/rand"
	"testing"
)

// TestNormKernelsMatch checks NormRow32's, NormGradRow32's and
// ReluGrad32's kernels against their Go loops, bit for bit (any NaN
// matching any NaN), on random values with infinities, NaN, signed zeros
// and subnormals among them, at lengths below, at and beyond one vector.
func TestNormKernelsMatch(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	const n = 1003
	g, x := make([]float32, n), make([]float32, n)
	for i := range g {
		g[i], x[i] = float32(r.NormFloat64()*10), float32(r.NormFloat64())
	}
	neg0 := float32(math.Copysign(0, -1))
	g[5], g[9], g[40], x[41], g[77], x[78] = float32(math.Inf(1)), float32(math.NaN()), neg0, float32(math.Inf(-1)), 1e-45, neg0
	x[3], x[5], x[9], x[12], x[13], g[12] = 0, -1, 2, float32(math.NaN()), 1e-45, float32(math.Inf(-1))
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	check := func(t *testing.T, what string, m int, got, want []float32) {
		t.Helper()
		for i := range want {
			if !same(got[i], want[i]) {
				t.Fatalf("%s m=%d [%d]: %v, Go loop %v", what, m, i, got[i], want[i])
			}
		}
	}
	for _, k := range kernels()[1:] {
		t.Run(k.String(), func(t *testing.T) {
			for _, m := range []int{n, 7, 8, 9, 15, 16, 17, 64} {
				want, got := make([]float32, m), make([]float32, m)
				normRowWith(scalar, want, x, 0.3, 1.7, -1.3, 0.25)
				normRowWith(k, got, x, 0.3, 1.7, -1.3, 0.25)
				check(t, "NormRow32", m, got, want)
				normGradRowWith(scalar, want, x, g, 0.3, 1.7, -0.2, 0.7, 1.9)
				normGradRowWith(k, got, x, g, 0.3, 1.7, -0.2, 0.7, 1.9)
				check(t, "NormGradRow32", m, got, want)
				reluGradWith(scalar, want, x, g)
				reluGradWith(k, got, x, g)
				check(t, "ReluGrad32", m, got, want)
			}
		})
	}
}

// TestNormSums8Match checks NormSums8's kernel against its Go loop, bit
// for bit (any NaN matching any NaN), on eight instances of random values
// with infinities, NaN, signed zeros and subnormals among them, of
// lengths below, at and beyond one 8×8 block, from nonzero sums.
func TestNormSums8Match(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b }
	for _, k := range kernels()[1:] {
		t.Run(k.String(), func(t *testing.T) {
			for _, S := range []int{1, 7, 8, 9, 16, 61, 4096} {
				x, g := make([]float32, 8*S), make([]float32, 8*S)
				for i := range x {
					x[i], g[i] = float32(r.NormFloat64()*3), float32(r.NormFloat64()*100)
				}
				if S > 20 {
					g[3], x[S+5], g[2*S+7], x[3*S+9], g[4*S+11] = float32(math.Inf(1)), float32(math.NaN()), float32(math.Copysign(0, -1)), 1e-45, 1e-45
				}
				var mu, inv, mg0, mgx0 [8]float64
				for e := range 8 {
					mu[e], inv[e], mg0[e], mgx0[e] = r.NormFloat64(), 1+r.Float64(), r.NormFloat64(), r.NormFloat64()
				}
				wg, wgx, gg, ggx := mg0, mgx0, mg0, mgx0
				normSums8With(scalar, x, g, S, &mu, &inv, &wg, &wgx)
				normSums8With(k, x, g, S, &mu, &inv, &gg, &ggx)
				for e := range 8 {
					if !same(gg[e], wg[e]) || !same(ggx[e], wgx[e]) {
						t.Fatalf("S=%d instance %d: sums %v %v, Go loop %v %v", S, e, gg[e], ggx[e], wg[e], wgx[e])
					}
				}
			}
		})
	}
}

// TestStats8Match checks Stats8's kernel against its Go loops, bit for
// bit (any NaN matching any NaN), on eight instances of random values
// (some with an infinity, a NaN, −0 or a subnormal among them) of lengths
// below, at and beyond one 8×8 block.
func TestStats8Match(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b }
	for _, k := range kernels()[1:] {
		t.Run(k.String(), func(t *testing.T) {
			for _, S := range []int{1, 7, 8, 9, 16, 61, 4096} {
				x := make([]float32, 8*S)
				for i := range x {
					x[i] = float32(r.NormFloat64()*3 + 1)
				}
				if S > 20 {
					x[S+3], x[2*S+5], x[3*S+7], x[4*S+9] = float32(math.Inf(-1)), float32(math.NaN()), float32(math.Copysign(0, -1)), 1e-45
				}
				var wm, wi, gm, gi [8]float64
				stats8With(scalar, x, S, 1e-5, &wm, &wi)
				stats8With(k, x, S, 1e-5, &gm, &gi)
				for e := range 8 {
					if !same(gm[e], wm[e]) || !same(gi[e], wi[e]) {
						t.Fatalf("S=%d instance %d: %v %v, Go loops %v %v", S, e, gm[e], gi[e], wm[e], wi[e])
					}
				}
			}
		})
	}
}

// TestAddRuns8Match checks AddRuns8's kernel against its Go loop, bit for
// bit (any NaN matching any NaN), from nonzero sums, on runs of lengths
// below, at and beyond one 8×8 block, with an infinity, a NaN and −0
// among the values.
func TestAddRuns8Match(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b }
	for _, k := range kernels()[1:] {
		t.Run(k.String(), func(t *testing.T) {
			for _, S := range []int{1, 7, 8, 9, 16, 61, 1024} {
				g := make([]float32, 8*S)
				for i := range g {
					g[i] = float32(r.NormFloat64() * 100)
				}
				if S > 20 {
					g[S+3], g[2*S+5], g[3*S+7] = float32(math.Inf(1)), float32(math.NaN()), float32(math.Copysign(0, -1))
				}
				var want, got [8]float64
				for e := range want {
					want[e] = r.NormFloat64()
				}
				got = want
				addRuns8With(scalar, &want, g, S)
				addRuns8With(k, &got, g, S)
				for e := range 8 {
					if !same(got[e], want[e]) {
						t.Fatalf("S=%d run %d: %v, Go loop %v", S, e, got[e], want[e])
					}
				}
			}
		})
	}
}

// TestAddProdRuns8Match checks AddProdRuns8's kernel, plain products and
// normalised ones, against its Go loops, bit for bit (any NaN matching
// any NaN), from nonzero sums, on runs of lengths below, at and beyond
// one 8×8 block, with an infinity, a NaN, −0 and a subnormal among the
// values.
func TestAddProdRuns8Match(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b }
	for _, k := range kernels()[1:] {
		t.Run(k.String(), func(t *testing.T) {
			for _, S := range []int{1, 7, 8, 9, 16, 61, 1024} {
				g, o := make([]float32, 8*S), make([]float32, 8*S)
				for i := range g {
					g[i], o[i] = float32(r.NormFloat64()*100), float32(r.NormFloat64()*3)
				}
				if S > 20 {
					g[S+3], o[2*S+5], g[3*S+7], o[4*S+9] = float32(math.Inf(1)), float32(math.NaN()), float32(math.Copysign(0, -1)), 1e-45
				}
				var mu, inv, acc0 [8]float64
				for e := range 8 {
					mu[e], inv[e], acc0[e] = r.NormFloat64(), 1+r.Float64(), r.NormFloat64()
				}
				for _, norm := range []bool{false, true} {
					m, iv := &mu, &inv
					if !norm {
						m, iv = nil, nil
					}
					want, got := acc0, acc0
					addProdRuns8With(scalar, &want, g, o, S, m, iv)
					addProdRuns8With(k, &got, g, o, S, m, iv)
					for e := range 8 {
						if !same(got[e], want[e]) {
							t.Fatalf("S=%d normalised %v run %d: %v, Go loop %v", S, norm, e, got[e], want[e])
						}
					}
				}
			}
		})
	}
}
