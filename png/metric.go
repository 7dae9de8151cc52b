package png

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/paretonav/paretonav/internal/par"
)

// Constrainer is a Method that can also hold its guarantee on the update a
// momentum or preconditioned optimizer actually makes (see
// PNG.Constrain). PNG implements it; MGD and Linear give no per-task
// guarantee and do not.
type Constrainer interface {
	Constrain(dst []float32, J Jacobian, prop, metric, bound []float32, scale float64) (MetricInfo, error)
	ImproperUpdate(J Jacobian, u []float32) bool
	TestsTrades() bool
}

// TestsTrades reports whether p makes the trade test (Settings.MaxTradeoff
// > 0), so that a caller need not form an update for ImproperUpdate when
// it would answer false anyway.
func (p PNG) TestsTrades() bool { return p.Settings.MaxTradeoff > 0 }

// ImproperUpdate reports whether the update u (the optimizer moves
// θ ← θ − lr·u) is an improper trade under Settings.MaxTradeoff: to first
// order it raises the task losses by more than MaxTradeoff times what it
// lowers them (TradeOK on Ju). It is always false when MaxTradeoff is
// zero or the Settings are invalid. A momentum or Adam optimizer's update
// is not the direction PNG tested, so the caller tests it again and, when
// it is improper, poses Constrain on it as for a control-on step.
func (p PNG) ImproperUpdate(J Jacobian, u []float32) bool {
	s, err := p.Settings.resolve()
	if err != nil || s.MaxTradeoff == 0 {
		return false
	}
	checkJacobian(J)
	if len(u) != J.N {
		panic(fmt.Sprintf("png: ImproperUpdate: len(u) = %d, want n = %d", len(u), J.N))
	}
	q := make([]float64, J.M)
	row := func(i int) { q[i] = dot64(J.Data[i*J.N:(i+1)*J.N], u) }
	if numWorkers(s.Workers, J.N) > 1 {
		par.For(J.M, row) // a row per worker: each sum the same bits
	} else {
		for i := range q {
			row(i)
		}
	}
	return !TradeOK(q, s.MaxTradeoff)
}

// firstOutside returns the first index of x whose value is not in
// (lo, hi] (NaN is not), or −1, checking column ranges of a long x on
// workers (Settings.Workers), each through outsideRange.
func firstOutside(x []float32, lo, hi float32, workers int) int {
	w := numWorkers(workers, len(x))
	first := make([]int, w)
	splitCols(len(x), w, 1, func(k, a, b int) {
		first[k] = -1
		if i := outsideRange(x[a:b], lo, hi); i >= 0 {
			first[k] = a + i
		}
	})
	for _, i := range first {
		if i >= 0 {
			return i
		}
	}
	return -1
}

// outsideRange is firstOutside on one range: on AVX-512 a kernel compares
// sixteen values at a time, the rest in Go.
func outsideRange(x []float32, lo, hi float32) int {
	done := 0
	if useVec && len(x) >= 16 {
		done = len(x) &^ 15
		if i := firstOutAVX512(&x[0], done, lo, hi); i < done {
			return i
		}
	}
	for i := done; i < len(x); i++ {
		if v := x[i]; !(v > lo && v <= hi) {
			return i
		}
	}
	return -1
}

// MetricInfo records what Constrain found.
type MetricInfo struct {
	G      float64   // g_P = min over the simplex of ωᵀ(J P Jᵀ)ω
	Scale  float64   // the step scale ρ the rate was asked at
	Phi    float64   // the rate φ_P = α·ρ·g_P asked of every task on the update
	Lambda []float64 // dual variables (m); all zero when the proposal already complies
	// Clipped is the number of coordinates of the update held at the
	// bound (0 without one).
	Clipped int
	// Inexact reports that the bounded problem's dual was not solved
	// within its bound on passes over the weights (see box.go): the update
	// still meets the rate Phi within the bound, but it is a step from
	// clip(prop + P∘Jᵀλ, −R, R) toward the min-norm update held within the
	// box rather than the closest such update. Clipped then counts the
	// coordinates at the bound of the former.
	Inexact bool
}

// stationaryTol: Constrain treats g_P ≤ stationaryTol·max_i K_P,ii as
// zero (Pareto-stationary in the metric to rounding) and asks φ_P = 0.
const stationaryTol = 1e-12

// Constrain writes into dst (n values) the update u closest to the
// optimizer's proposal prop in the optimizer's own diagonal metric P
// (metric; nil means P = I), within its per-coordinate bound R (bound; nil
// means none), such that every task loss decreases at rate at least φ_P
// along −u:
//
//	minimise ½‖u − prop‖²_{P⁻¹}  subject to  ∇ℓ_iᵀu ≥ φ_P for every i,
//	                                         −R ≤ u ≤ R,
//
// with φ_P = α·ρ·g_P (0 when g_P ≤ 1e-12·max_i K_P,ii: rounding at a
// Pareto-stationary point), g_P = min over the simplex of ωᵀK_Pω,
// K_P = J P Jᵀ, and ρ = scale. g_P is the metric's own min-norm value:
// the min-norm (MGD) update of the metric, u = P Jᵀω, guarantees every
// task the rate g_P. ρ is the length of the step the optimizer takes
// relative to that of the direction it was handed (the caller's measure;
// finetune uses ‖prop‖_{P⁻¹}/‖P v‖_{P⁻¹}): momentum and Adam's averaging
// lengthen a steady direction and shorten a noisy one, and the rate asked
// scales with the step, as the paper's φ = α·g does for a plain step
// (ρ = 1). Asked at ρ = 1, Adam's averaged step, which under minibatch
// noise is much shorter than P v, must be stretched until it meets the rate
// of the un-averaged step: every constraint binds and the criterion has no
// first-order effect on the losses.
// Its dual is the paper's with K replaced by K_P and Jz by J·prop: λ ≥ 0
// minimises ½λᵀK_Pλ + λᵀ(J·prop − φ_P1), and u = prop + P Jᵀλ.
//
// The bound is the optimizer's trust region: an optimizer that normalises
// its step (Adam) never moves coordinate c by more than R_c per unit rate,
// however large its gradient, and P, its response to a small change of the
// gradient, says nothing about a change large beside its memory. Where the
// unbounded update leaves the box, u = clip(prop + P∘Jᵀλ, −R, R) with λ the
// dual of the bounded problem (see box.go), and the rate asked is at most
// α times what the min-norm update held within the box, ũ = clip(ρ·P Jᵀω,
// −R, R), gives every task: φ_P = α·min(ρ·g_P, max(0, min_i ∇ℓ_iᵀũ)), which
// ũ itself meets for α ≤ 1 (for α > 1 a rate out of reach is lowered to
// it). Where the unbounded update lies within the box it is the answer, as
// without a bound. prop must lie within the box (the optimizer's own step
// does).
//
// The optimizer moves θ ← θ − lr·u, so every task satisfies
// ∇ℓ_iᵀΔθ ≤ −lr·φ_P to first order. For plain steps (prop the PNG
// direction v, P = I, ρ = 1) the constraints already hold (the paper's KKT
// conditions) and λ = 0: u = v. For momentum SGD, prop = μb + v and P = I;
// for Adam, prop is Adam's step m̂/(√v̂+ε), P = 1/(√v̂+ε) and R the largest
// step Adam could take at this step whatever its gradient (see the
// finetune package). The metric must be positive and finite, the bound
// positive (+Inf: no bound on that coordinate), and scale finite and ≥ 0.
// dst may be prop itself (the update is written coordinate by coordinate
// after the last read of prop): the training loop keeps one buffer for
// both.
//
// Errors: non-finite J, prop or metric (wrapping ErrNonFinite), a dual
// without minimiser (wrapping ErrUnbounded), invalid Settings or scale.
// Constrain panics when the shapes of dst, J, prop, metric and bound
// disagree.
func (p PNG) Constrain(dst []float32, J Jacobian, prop, metric, bound []float32, scale float64) (MetricInfo, error) {
	return p.constrain(dst, J, prop, metric, bound, scale, nil)
}

// constrain is Constrain counting its passes over the weights in cnt (nil:
// not counted).
func (p PNG) constrain(dst []float32, J Jacobian, prop, metric, bound []float32, scale float64, cnt *boxCounter) (MetricInfo, error) {
	s, err := p.Settings.resolve()
	if err != nil {
		return MetricInfo{}, err
	}
	checkJacobian(J)
	m, n := J.M, J.N
	if len(dst) != n || len(prop) != n || (metric != nil && len(metric) != n) || (bound != nil && len(bound) != n) {
		panic(fmt.Sprintf("png: Constrain: len(dst) = %d, len(prop) = %d, len(metric) = %d, len(bound) = %d, want n = %d (metric and bound may be nil)",
			len(dst), len(prop), len(metric), len(bound), n))
	}
	if m == 0 {
		return MetricInfo{}, errNoTasks
	}
	if !(scale >= 0) || math.IsInf(scale, 0) {
		return MetricInfo{}, fmt.Errorf("png: Constrain: scale = %v, want a finite value ≥ 0: %w", scale, ErrNonFinite)
	}
	if k := firstOutside(metric, 0, math.MaxFloat32, p.Settings.Workers); k >= 0 {
		return MetricInfo{}, fmt.Errorf("png: Constrain: metric[%d] = %v, want a finite value > 0: %w", k, metric[k], ErrNonFinite)
	}
	if k := firstOutside(bound, 0, float32(math.Inf(1)), p.Settings.Workers); k >= 0 {
		return MetricInfo{}, fmt.Errorf("png: Constrain: bound[%d] = %v, want a value > 0 (+Inf: none): %w", k, bound[k], ErrNonFinite)
	}
	if cnt == nil {
		cnt = &boxCounter{}
	}
	K := make([]float64, m*m)
	jp := make([]float64, m)
	cnt.pass()
	if metric == nil {
		gramPass(K, jp, J, prop, s.Workers)
	} else {
		metricGram(K, jp, J, metric, prop, s.Workers)
	}
	if err := checkFinite(K, jp, nil, m); err != nil {
		return MetricInfo{}, err
	}
	omega, g := MinNorm(K, m)
	info := MetricInfo{G: g, Scale: scale, Phi: s.Alpha * scale * g, Lambda: make([]float64, m)}
	var top float64
	for i := 0; i < m; i++ {
		top = math.Max(top, K[i*m+i])
	}
	if g <= stationaryTol*top {
		// Pareto-stationary in the metric to rounding: g_P is noise and
		// so would be φ_P > 0, which makes the constraints of opposite
		// gradients infeasible; ask only that no loss rise.
		info.Phi = 0
	}
	lambda, err := metricDual(K, jp, m, info.Phi)
	if err != nil {
		return info, err
	}
	// mix and anchor: the fallback when boxDual ran out of rounds (see
	// boxCombine).
	var mix float64
	var anchor []float64
	if bound != nil {
		// One pass tests the unbounded update against the box and finds
		// the rates of the min-norm update held within it.
		cnt.pass()
		top := make([]float64, m)
		mn := &boxMinNorm{Omega: omega, Scale: scale}
		if boxTest(J, lambda, metric, prop, bound, s.Workers, top, mn) > 0 {
			mix, anchor, lambda, err = p.constrainBox(&info, s, J, K, jp, lambda, omega, metric, prop, bound, scale, cnt, top, mn)
			if err != nil {
				return info, err
			}
		}
	}
	info.Lambda = lambda
	cnt.pass()
	var finite bool
	if bound != nil {
		finite = boxCombine(dst, J, lambda, metric, prop, bound, mix, anchor, scale, s.Workers)
	} else {
		finite = metricCombine(dst, J, lambda, metric, prop, s.Workers)
	}
	if !finite {
		return info, fmt.Errorf("png: Constrain: update overflows float32: %w", ErrNonFinite)
	}
	return info, nil
}

// constrainBox is Constrain where the unbounded update leaves the box:
// it lowers the rate to what the min-norm update held within the box
// gives (mn) where it asks more, solves the bounded dual (top: Σ_c
// |J_ic|·R_c), and returns the λ of the update, and, when the rounds ran
// out, the step toward the anchor that boxCombine takes (see there).
func (p PNG) constrainBox(info *MetricInfo, s Settings, J Jacobian, K, jp, lambda, omega []float64, metric, prop, bound []float32, scale float64, cnt *boxCounter, top []float64, mn *boxMinNorm) (float64, []float64, []float64, error) {
	m := J.M
	var err error
	w := make([]float64, m)
	for i := range w {
		w[i] = 1
		if K[i*m+i] > 0 {
			w[i] = 1 / math.Sqrt(K[i*m+i])
		}
	}
	sc := newBoxScratch(J.N)
	// reach: the rate the min-norm update held within the box gives.
	reach := math.Inf(1)
	qt := mn.Rates
	if mn.Clipped && info.Phi > 0 {
		reach = math.Max(slices.Min(qt), 0)
		if s.Alpha*reach < info.Phi {
			info.Phi = s.Alpha * reach
			if lambda, err = metricDual(K, jp, m, info.Phi); err != nil {
				return 0, nil, nil, err
			}
		}
	}
	res, err := boxDual(J, lambda, w, metric, prop, bound, info.Phi, s.Workers, cnt, sc, top)
	for _, lower := range []float64{reach, 0} {
		if !errors.Is(err, ErrUnbounded) || lower >= info.Phi {
			continue
		}
		// A rate out of reach within the box (α > 1, or rounding
		// where the box leaves little room): ask what the min-norm
		// update within it gives, at last only that no loss rise
		// (u = 0 meets it).
		info.Phi = lower
		if lambda, err = metricDual(K, jp, m, info.Phi); err == nil {
			res, err = boxDual(J, lambda, w, metric, prop, bound, info.Phi, s.Workers, cnt, sc, top)
		}
	}
	if err != nil {
		return 0, nil, nil, err
	}
	info.Clipped = res.clipped
	if res.done {
		return 0, nil, res.lambda, nil
	}
	// Out of rounds: step from u(λ) toward the min-norm update held
	// within the box (rates qt) until every task has the rate, lowered
	// to what that update gives where it gives less (to 0, with u = 0 as
	// the anchor, where it raises a loss).
	info.Inexact = true
	anchor := omega
	if low := slices.Min(qt); low < info.Phi {
		info.Phi = math.Max(low, 0)
		if low < 0 {
			anchor, qt = nil, make([]float64, m)
		}
	}
	var mix float64
	for i, r := range res.rates {
		if r < info.Phi && qt[i] > r {
			mix = math.Max(mix, (info.Phi-r)/(qt[i]-r))
		}
	}
	return math.Min(mix, 1), anchor, res.lambda, nil
}

// metricDual returns the λ ≥ 0 of the unbounded problem: the minimiser of
// ½λᵀKλ + λᵀ(jp − φ1).
func metricDual(K, jp []float64, m int, phi float64) ([]float64, error) {
	b := make([]float64, m)
	for i := range b {
		b[i] = jp[i] - phi
	}
	lambda, err := SolveDual(K, m, b)
	if err != nil {
		return nil, fmt.Errorf("png: Constrain with φ_P = %g: %w", phi, err)
	}
	return lambda, nil
}

// metricGram writes K = J diag(P) Jᵀ (m×m) and jp = J·prop (m) in one
// pass over J, accumulating in float64, split over columns in chunks
// (forChunks) whose partials are summed in chunk order: the same bits
// whatever the number of workers.
func metricGram(K, jp []float64, J Jacobian, P, prop []float32, workers int) {
	m, n := J.M, J.N
	clear(K)
	clear(jp)
	if n == 0 {
		return
	}
	nc := numChunks(n)
	stride := m*m + m
	parts := make([]float64, nc*stride)
	forChunks(n, workers, func(wi, lo, hi int) {
		part := parts[wi*stride : (wi+1)*stride]
		switch m {
		case 2:
			metricGramRange2(part, J, P, prop, lo, hi)
		case 3:
			metricGramRange3(part, J, P, prop, lo, hi)
		default:
			metricGramRangeM(part, J, P, prop, lo, hi)
		}
	})
	for wi := 0; wi < nc; wi++ {
		for i := 0; i < m; i++ {
			for j := 0; j <= i; j++ {
				K[i*m+j] += parts[wi*stride+i*m+j]
			}
			jp[i] += parts[wi*stride+m*m+i]
		}
	}
	for i := 0; i < m; i++ {
		for j := 0; j < i; j++ {
			K[j*m+i] = K[i*m+j]
		}
	}
}

// metricCombine writes dst = prop + P∘(Jᵀλ) (P nil: identity), each
// element accumulated in float64 and rounded once: boxCombine without a box.
// It reports whether every element is finite.
func metricCombine(dst []float32, J Jacobian, lambda []float64, P, prop []float32, workers int) bool {
	return boxCombine(dst, J, lambda, P, prop, nil, 0, nil, 0, workers)
}

// metricGramRangeM adds the products of columns [lo, hi) into part: K's
// m×m sums (lower triangle) then jp's m, each sum in column order.
func metricGramRangeM(part []float64, J Jacobian, P, prop []float32, lo, hi int) {
	m, n := J.M, J.N
	pk, pe := part[:m*m], part[m*m:m*m+m]
	col := make([]float64, m)
	for c := lo; c < hi; c++ {
		pc := float64(P[c])
		for i := 0; i < m; i++ {
			col[i] = float64(J.Data[i*n+c])
		}
		for i := 0; i < m; i++ {
			a := col[i] * pc
			for j := 0; j <= i; j++ {
				pk[i*m+j] += a * col[j]
			}
			pe[i] += col[i] * float64(prop[c])
		}
	}
}

// metricGramRange3 is metricGramRangeM for m = 3, its sums in registers:
// the same operations in the same order, so the same bits; on AVX-512 a
// kernel sums eight columns at a time in eight lanes (metricGramRange2).
func metricGramRange3(part []float64, J Jacobian, P, prop []float32, lo, hi int) {
	n := J.N
	j0s := J.Data[lo:hi]
	j1s := J.Data[n+lo : n+hi][:len(j0s)]
	j2s := J.Data[2*n+lo : 2*n+hi][:len(j0s)]
	ps, xs := P[lo:hi][:len(j0s)], prop[lo:hi][:len(j0s)]
	k00, k10, k11, k20, k21, k22 := part[0], part[3], part[4], part[6], part[7], part[8]
	e0, e1, e2 := part[9], part[10], part[11]
	done := 0
	if useVec && len(j0s) >= 8 {
		done = len(j0s) &^ 7
		var lanes [9][8]float64
		gram3AVX512(&lanes, &j0s[0], &j1s[0], &j2s[0], &ps[0], &xs[0], done)
		for l := 0; l < 8; l++ {
			k00 += lanes[0][l]
			k10 += lanes[1][l]
			k11 += lanes[2][l]
			k20 += lanes[3][l]
			k21 += lanes[4][l]
			k22 += lanes[5][l]
			e0 += lanes[6][l]
			e1 += lanes[7][l]
			e2 += lanes[8][l]
		}
	}
	for c := done; c < len(j0s); c++ {
		pc, x := float64(ps[c]), float64(xs[c])
		v0, v1, v2 := float64(j0s[c]), float64(j1s[c]), float64(j2s[c])
		a0 := v0 * pc
		k00 += a0 * v0
		e0 += v0 * x
		a1 := v1 * pc
		k10 += a1 * v0
		k11 += a1 * v1
		e1 += v1 * x
		a2 := v2 * pc
		k20 += a2 * v0
		k21 += a2 * v1
		k22 += a2 * v2
		e2 += v2 * x
	}
	part[0], part[3], part[4], part[6], part[7], part[8] = k00, k10, k11, k20, k21, k22
	part[9], part[10], part[11] = e0, e1, e2
}

// metricGramRange2 is metricGramRangeM for m = 2: on AVX-512 a kernel
// sums eight columns at a time in eight lanes (the lanes added in order
// at the end: the sums' bits differ from the column-order sums by
// rounding alone), the rest in Go with the sums in registers.
func metricGramRange2(part []float64, J Jacobian, P, prop []float32, lo, hi int) {
	n := J.N
	j0s := J.Data[lo:hi]
	j1s := J.Data[n+lo : n+hi][:len(j0s)]
	ps, xs := P[lo:hi][:len(j0s)], prop[lo:hi][:len(j0s)]
	k00, k10, k11, e0, e1 := part[0], part[2], part[3], part[4], part[5]
	done := 0
	if useVec && len(j0s) >= 8 {
		done = len(j0s) &^ 7
		var lanes [5][8]float64
		gram2AVX512(&lanes, &j0s[0], &j1s[0], &ps[0], &xs[0], done)
		for l := 0; l < 8; l++ {
			k00 += lanes[0][l]
			k10 += lanes[1][l]
			k11 += lanes[2][l]
			e0 += lanes[3][l]
			e1 += lanes[4][l]
		}
	}
	for c := done; c < len(j0s); c++ {
		pc, x := float64(ps[c]), float64(xs[c])
		v0, v1 := float64(j0s[c]), float64(j1s[c])
		a0 := v0 * pc
		k00 += a0 * v0
		e0 += v0 * x
		a1 := v1 * pc
		k10 += a1 * v0
		k11 += a1 * v1
		e1 += v1 * x
	}
	part[0], part[2], part[3], part[4], part[5] = k00, k10, k11, e0, e1
}
