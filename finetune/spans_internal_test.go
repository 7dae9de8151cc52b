package finetune

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/paretonav/paretonav/finetune/internal/stepvec"
	"github.com/paretonav/paretonav/png"
)

// TestVectorPassesSplit checks that the optimizer's passes over a vector
// long enough to be cut into spans on the worker pool (propose, applyTheta,
// advance, the finiteness checks, firstOrderChange, copyVec) give bit for
// bit what they give on short pieces of it, which run in one piece on the
// caller: cutting the work changes nothing the loop computes.
func TestVectorPassesSplit(t *testing.T) {
	const n = 5*minSpan + 37
	const piece = 1000 // below 2·minSpan: never cut
	rng := rand.New(rand.NewPCG(7, 7))
	vec := func(scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * scale)
		}
		return v
	}
	v, pend, base, u := vec(1), vec(1), vec(1), vec(0.1)
	st := OptState{M: vec(0.1), V: vec(0.01), T: 4}
	for i := range st.V {
		st.V[i] *= st.V[i] // second moments are ≥ 0
	}
	for i := 0; i < n; i += 97 {
		st.M[i] = 0 // adamBound's no-first-moment branch
	}
	pieces := func(f func(lo, hi int)) {
		for lo := 0; lo < n; lo += piece {
			f(lo, min(lo+piece, n))
		}
	}
	for _, s := range []Settings{
		{Optimizer: "adam", Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
		{Optimizer: "sgd", Momentum: 0.9},
		{Optimizer: "sgd"},
	} {
		name := s.Optimizer
		if s.Momentum != 0 {
			name += "+momentum"
		}
		for _, pd := range [][]float32{nil, pend} {
			prop, metric, bound := make([]float32, n), make([]float32, n), make([]float32, n)
			wantProp, wantMetric, wantBound := make([]float32, n), make([]float32, n), make([]float32, n)
			s.propose(prop, metric, bound, v, st, pd)
			pieces(func(lo, hi int) {
				sub := OptState{M: st.M[lo:hi], V: st.V[lo:hi], T: st.T}
				var p []float32
				if pd != nil {
					p = pd[lo:hi]
				}
				s.propose(wantProp[lo:hi], wantMetric[lo:hi], wantBound[lo:hi], v[lo:hi], sub, p)
			})
			if !slices.Equal(prop, wantProp) || !slices.Equal(metric, wantMetric) || !slices.Equal(bound, wantBound) {
				t.Errorf("%s, pending %v: propose differs when cut into spans", name, pd != nil)
			}
		}
		for _, uu := range [][]float32{nil, u} {
			got, want := make([]float32, n), make([]float32, n)
			if !s.applyTheta(got, base, v, uu, st, 1e-3) {
				t.Errorf("%s: applyTheta reports a non-finite value among finite ones", name)
			}
			pieces(func(lo, hi int) {
				var w []float32
				if uu != nil {
					w = uu[lo:hi]
				}
				s.applyTheta(want[lo:hi], base[lo:hi], v[lo:hi], w, OptState{M: st.M[lo:hi], V: st.V[lo:hi], T: st.T}, 1e-3)
			})
			if !slices.Equal(got, want) {
				t.Errorf("%s, update given %v: applyTheta differs when cut into spans", name, uu != nil)
			}
		}
		got := OptState{M: slices.Clone(st.M), V: slices.Clone(st.V), T: st.T}
		want := OptState{M: slices.Clone(st.M), V: slices.Clone(st.V), T: st.T}
		s.advance(&got, v)
		pieces(func(lo, hi int) {
			sub := OptState{M: want.M[lo:hi], V: want.V[lo:hi], T: st.T}
			s.advance(&sub, v[lo:hi])
		})
		if !slices.Equal(got.M, want.M) || !slices.Equal(got.V, want.V) {
			t.Errorf("%s: advance differs when cut into spans", name)
		}
	}

	c := make([]float32, n)
	if copyVec(c, v); !slices.Equal(c, v) {
		t.Error("copyVec: the copy differs")
	}

	J := png.NewJacobian(3, n)
	for i := range J.Data {
		J.Data[i] = float32(rng.NormFloat64())
	}
	got := firstOrderChange(nil, J, base, v)
	for i := range 3 {
		var s, abs float64
		for j, g := range J.Row(i) {
			d := float64(g) * (float64(v[j]) - float64(base[j]))
			s += d
			abs += math.Abs(d)
		}
		if one := stepvec.DeltaDot(J.Row(i), base, v); got[i] != one {
			t.Errorf("firstOrderChange row %d: %v on the pool, %v on one core", i, got[i], one)
		}
		if math.Abs(got[i]-s) > 1e-12*abs {
			t.Errorf("firstOrderChange row %d: %v, the sum in index order %v", i, got[i], s)
		}
	}

	for _, tc := range []struct {
		at  int
		val float32
	}{{-1, 0}, {0, float32(math.NaN())}, {n / 2, float32(math.Inf(1))}, {n - 1, float32(math.Inf(-1))}, {3 * minSpan, float32(math.NaN())}} {
		x := slices.Clone(v)
		if tc.at >= 0 {
			x[tc.at] = tc.val
		}
		if got, want := finite32(x), tc.at < 0; got != want {
			t.Errorf("finite32 with %v at %d: %v, want %v", tc.val, tc.at, got, want)
		}
		s := Settings{Optimizer: "sgd"}
		if got, want := s.applyTheta(make([]float32, n), x, v, nil, OptState{}, 1e-3), tc.at < 0; got != want {
			t.Errorf("applyTheta from a base with %v at %d: reports finite %v, want %v", tc.val, tc.at, got, want)
		}
	}
}
