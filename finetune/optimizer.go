package finetune

import (
	"math"
	"sync/atomic"

	"github.com/paretonav/paretonav/finetune/internal/stepvec"
)

// OptState is an optimizer's memory for one parameter vector: SGD's
// momentum buffer in M, Adam's first and second moments in M and V, and
// the number of updates T. It is part of a checkpoint.
type OptState struct {
	M, V []float32
	T    int
}

// plain reports whether the optimizer is plain SGD (θ ← θ − lr·v), whose
// update is the direction itself: PNG's guarantee on v holds for it as is.
func (s *Settings) plain() bool { return s.Optimizer != "adam" && s.Momentum == 0 }

// propose writes into prop the update u the optimizer would make, per unit
// learning rate (θ ← θ − lr·u), if handed the direction v, and returns its
// diagonal metric P in metric: handing it v + δ instead would propose
// u + P∘δ', where δ' is δ as its memory weighs the current gradient, so
// that the update closest to u in the norm ‖·‖_{P⁻¹} with every loss
// decreasing fast enough is u + P∘Jᵀλ (png.PNG.Constrain). For Adam it
// also writes into bound its trust region R: P holds only for a δ small
// beside its memory, and no gradient whatever moves coordinate i by more
// than R_i (adamBound); the constrained update stays within it. st is not
// changed. When pend is not nil, st has yet to take the direction pend
// (the loop's pending update, run.go's commit): the proposal is made from
// the state advance(st, pend) would give, computed element by element, bit
// for bit, without storing it.
//
//   - momentum SGD (b ← μb + v, θ ← θ − lr·b): u = μb + v, P = I (metric
//     is left alone and false is returned);
//   - Adam: with m' = β1m + (1−β1)v and w' = β2w + (1−β2)v² (the moments
//     after this step, bias-corrected by c1 = 1−β1ᵗ and c2 = 1−β2ᵗ),
//     u = (m'/c1)/(√(w'/c2)+ε) and P = 1/(√(w'/c2)+ε): the metric of the
//     step Adam takes, its second moment held at what v gives it, and
//     R = adamBound of the moments before this step;
//   - plain SGD: u = v, P = I.
func (s *Settings) propose(prop, metric, bound, v []float32, st OptState, pend []float32) bool {
	switch {
	case s.Optimizer == "adam":
		t := st.T + 1
		if pend != nil {
			t++
		}
		a := stepvec.NewAdam(s.Beta1, s.Beta2, s.Eps, t)
		spans(len(v), func(lo, hi int) {
			a.Propose(prop[lo:hi], metric[lo:hi], bound[lo:hi], v[lo:hi], part(st.M, lo, hi), part(st.V, lo, hi), part(pend, lo, hi))
		})
		return true
	case s.Momentum != 0:
		mu := stepvec.Momentum(s.Momentum)
		spans(len(v), func(lo, hi int) {
			mu.Propose(prop[lo:hi], v[lo:hi], part(st.M, lo, hi), part(pend, lo, hi))
		})
	default:
		copy(prop, v)
	}
	return false
}

// adamBound returns the largest step, per unit learning rate, that Adam
// can take on one coordinate at a step whose bias corrections are
// c1 = 1−β1ᵗ and c2 = 1−β2ᵗ, from the moments m0 and w0 before it, over
// every gradient g it might be handed there:
//
//	sup_g |a + b·g| / √(c + d·g²) = √(a²/c + b²/d)
//
// with a = β1·m0/c1, b = (1−β1)/c1, c = β2·w0/c2, d = (1−β2)/c2
// (Cauchy–Schwarz: (a + b·g)² ≤ (a²/c + b²/d)(c + d·g²); ε only shortens
// the step). With no memory (m0 = w0 = 0) it is b/√d, 1 at the first step.
// It is at most AdamStepBound(t): the bound over every gradient history.
func adamBound(b1, b2, c1, c2, m0, w0 float64) float64 {
	return stepvec.Adam{B1: b1, B2: b2, C1: c1, C2: c2}.Bound(m0, w0)
}

// part is x[lo:hi], nil for a nil x (no optimizer memory yet, no
// pending step).
func part(x []float32, lo, hi int) []float32 {
	if x == nil {
		return nil
	}
	return x[lo:hi]
}

// AdamStepBound returns B_t, the most Adam (moments β1, β2 with β1² < β2)
// can move one parameter at its step t, per unit learning rate, whatever
// its gradients: |m̂_t|/√v̂_t ≤ B_t, where by Cauchy–Schwarz over the
// history, with r = β1²/β2,
//
//	|m_t| = (1−β1)|Σ_k β1^{t−k} g_k| ≤ (1−β1) √(Σ_{j<t} r^j) √(w_t/(1−β2)),
//	B_t = (1−β1)/(1−β1ᵗ) · √((1−β2ᵗ)/(1−β2)) · √((1−rᵗ)/(1−r)).
//
// B_1 = 1; with the defaults (0.9, 0.999) B_t is 1.04 at step 10, 1.16 at
// step 20, 1.30 at step 30, 2.24 at step 100, and tends to
// 0.1·√1000·√(1/(1−0.811)) ≈ 7.27. The bound is reached by the history
// g_k ∝ (β1/β2)^{t−k}. Adam moves a
// parameter by at most lr·B_t at step t, and PNG's constrained update of
// its proposal stays within the same bound (png.PNG.Constrain's bound).
// It returns +Inf when β1² ≥ β2 (no bound of this form).
func AdamStepBound(beta1, beta2 float64, t int) float64 {
	r := beta1 * beta1 / beta2
	if r >= 1 || t < 1 {
		return math.Inf(1)
	}
	ft := float64(t)
	c1, c2 := 1-math.Pow(beta1, ft), 1-math.Pow(beta2, ft)
	return (1 - beta1) / c1 * math.Sqrt(c2/(1-beta2)) * math.Sqrt((1-math.Pow(r, ft))/(1-r))
}

// stepScale returns ρ = min(‖prop‖_{P⁻¹}/‖P∘v‖_{P⁻¹}, top): the length of
// the optimizer's proposed step relative to the step P∘v it would take for
// the direction v alone, in its own metric P (nil: I), at most top.
// Momentum and Adam's averaging make it smaller than along a steady
// direction under minibatch noise; top is its value along a steady
// direction (Settings.steadyScale), which it passes only where v has
// shrunk below the optimizer's memory: there the rate asked would grow
// without bound. It is top when v is zero.
func stepScale(prop, metric, v []float32, top float64) float64 {
	num, den := stepvec.ScaleSums(prop, metric, v)
	if den == 0 || !(num >= 0) || math.IsInf(num, 0) || math.IsInf(den, 0) {
		return top
	}
	return math.Min(math.Sqrt(num/den), top)
}

// steadyScale is stepScale's ρ along a steady direction (the same v at
// every step, long after the start): 1/(1−μ) for momentum SGD, 1 for Adam
// (m̂ = v, √v̂ = |v|: the step is P∘v) and plain SGD.
func (s *Settings) steadyScale() float64 {
	if s.Optimizer != "adam" && s.Momentum != 0 {
		return 1 / (1 - s.Momentum)
	}
	return 1
}

// apply moves theta along the direction v with learning rate lr, updating
// the optimizer state st. Arithmetic is in float64, rounded to float32 once
// per element, so that it is deterministic.
//
// When u is not nil it is the update to make instead of the optimizer's
// own proposal for v (per unit learning rate, θ ← θ − lr·u; PNG's
// constrained update of propose's proposal). The state is still updated
// with v, as if the optimizer had moved by its proposal: the correction is
// made afresh at every step and never accumulates in the optimizer's
// memory. Carrying it there (Adam's first moment set to what proposes u)
// lengthens the next proposal, hence the rate asked of it (stepScale), and
// the update grew without bound (ρ reached 1e14 by step 190 on LeNet2 from scratch).
func (s *Settings) apply(theta, v, u []float32, st *OptState, lr float64) {
	s.applyTheta(theta, theta, v, u, *st, lr)
	s.advance(st, v)
}

// applyTheta writes into dst the parameters apply would give from base
// (dst may be base) with the direction v, the update u (nil: the
// optimizer's own) and the rate lr, leaving the optimizer's state st as
// it is: the loop keeps the state from before its last update until the
// step after it proves good (run.go's commit), when advance brings it
// forward. The arithmetic is apply's, element for element. It reports
// whether every value written is finite (the loop's check of the new
// parameters, made in the same pass).
func (s *Settings) applyTheta(dst, base, v, u []float32, st OptState, lr float64) bool {
	var nonFinite atomic.Bool
	spans(len(v), func(lo, hi int) {
		if !s.applyRange(dst, base, v, u, st, lr, lo, hi) {
			nonFinite.Store(true)
		}
	})
	return !nonFinite.Load()
}

// applyRange is applyTheta on the elements [lo, hi): it reports whether
// every value it wrote is finite.
func (s *Settings) applyRange(dst, base, v, u []float32, st OptState, lr float64, lo, hi int) bool {
	dst, base = dst[lo:hi], base[lo:hi]
	switch {
	case u != nil:
		return stepvec.Update(dst, base, u[lo:hi], lr)
	case s.Optimizer == "adam":
		a := stepvec.NewAdam(s.Beta1, s.Beta2, s.Eps, st.T+1)
		return a.Update(dst, base, v[lo:hi], part(st.M, lo, hi), part(st.V, lo, hi), lr)
	case s.Momentum != 0:
		return stepvec.Momentum(s.Momentum).Update(dst, base, v[lo:hi], part(st.M, lo, hi), lr)
	default:
		return stepvec.Update(dst, base, v[lo:hi], lr)
	}
}

// advance brings the optimizer's state st forward by the direction v, as
// apply does (its update is made separately: applyTheta).
func (s *Settings) advance(st *OptState, v []float32) {
	switch {
	case s.Optimizer == "adam":
		if st.M == nil {
			st.M = make([]float32, len(v))
			st.V = make([]float32, len(v))
		}
		st.T++
		a := stepvec.NewAdam(s.Beta1, s.Beta2, s.Eps, st.T)
		M, V := st.M, st.V
		spans(len(v), func(lo, hi int) { a.Advance(M[lo:hi], V[lo:hi], v[lo:hi]) })
	case s.Momentum != 0:
		if st.M == nil {
			st.M = make([]float32, len(v))
		}
		st.T++
		mu, M := stepvec.Momentum(s.Momentum), st.M
		spans(len(v), func(lo, hi int) { mu.Advance(M[lo:hi], v[lo:hi]) })
	default:
		st.T++
	}
}
