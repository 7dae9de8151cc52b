package png

import (
	"errors"
	"fmt"
)

// PNG is Pareto Navigation Gradient Descent (Ye & Liu, UAI 2022) as a
// Method: the direction that descends on the criterion F while the task
// losses are far from Pareto stationary only moves in ways that decrease
// all of them fast enough.
//
// Per call (docs/design.md, section 2): K = J Jᵀ and g = min over the simplex of ωᵀKω;
// the threshold e = γ·min(ē, ρ·ē_W) with ē the discounted average of
// trace(K)/m, updated in the State (current step included), and ē_W its
// value after the warm-up (Settings.ThresholdCap); if g ≤ e the control is off
// and v = ∇F, unless that step is an improper trade (Settings.MaxTradeoff,
// TradeOK on Jv = K·Coef + J·Extra: Info.Improper; the control is then
// turned on, and where its dual is unbounded, at a Pareto-stationary point
// with opposing gradients, v = 0: Info.Held); otherwise φ = α·g and λ ≥ 0 solves the dual
// min ½λᵀKλ + λᵀ(Jz − φ1), z = ∇F, Jz = K·Coef + J·Extra, and
// v = ∇F + Jᵀλ = Jᵀ(Coef + λ) + Extra. With the control on, every task
// satisfies ∇ℓ_iᵀv ≥ φ (the KKT conditions of the dual), so a small step
// −ξv decreases every loss.
//
// Direction reads J twice: one pass for K and J·Extra (Gram), one for v.
// Everything else works on m×m data.
type PNG struct {
	Settings Settings
}

// Direction writes the PNG direction into dst (n values) and reports what
// it found. st carries ē between steps and is updated only on success; a
// nil st means no history (ē = trace(K)/m of this step). The caller moves
// θ ← θ − ξ·v. Errors: invalid Settings, no tasks, non-finite gradients
// (wrapping ErrNonFinite), or a dual QP without minimiser (wrapping
// ErrUnbounded; impossible in exact arithmetic since the control is on
// only when g > e ≥ 0). Direction panics when the shapes of dst, J and
// grad do not agree.
func (p PNG) Direction(dst []float32, J Jacobian, grad Gradient, st *State) (Info, error) {
	s, err := p.Settings.resolve()
	if err != nil {
		return Info{}, err
	}
	checkShapes(dst, J, grad)
	m := J.M
	if m == 0 {
		return Info{}, errNoTasks
	}
	K := make([]float64, m*m)
	var je []float64
	if grad.Extra != nil {
		je = make([]float64, m)
	}
	gramPass(K, je, J, grad.Extra, s.Workers)
	if err := checkFinite(K, je, grad.Coef, m); err != nil {
		return Info{}, err
	}
	omega, g := MinNorm(K, m)
	var prev State
	if st != nil {
		prev = *st
	}
	var trace float64
	for i := 0; i < m; i++ {
		trace += K[i*m+i]
	}
	next, e := prev.observe(trace/float64(m), s.Discount).threshold(s)
	info := Info{G: g, E: e, Omega: omega, Lambda: make([]float64, m)}
	info.ControlOn = g > info.E
	if !info.ControlOn && s.MaxTradeoff > 0 && !TradeOK(freeRates(K, je, grad.Coef, m), s.MaxTradeoff) {
		info.ControlOn, info.Improper = true, true
	}
	if info.ControlOn {
		info.Phi = s.Alpha * g
	}
	lambda, vnorm, err := controlled(dst, J, grad, K, je, info.ControlOn, info.Phi, s.Workers)
	if err != nil && info.Improper && errors.Is(err, ErrUnbounded) {
		clear(dst)
		info.Held = true
		lambda, vnorm, err = make([]float64, m), 0, nil
	}
	if err != nil {
		return info, err
	}
	if info.ControlOn {
		info.Lambda = lambda
	}
	info.VNorm = vnorm
	if st != nil {
		*st = next
	}
	return info, nil
}

// controlled writes v = ∇F + Jᵀλ into dst, where λ = 0 when on is false and
// otherwise solves the dual with control phi, given K and je = J·Extra
// (nil when Extra is nil). It returns λ and ‖v‖. Tests call it with
// arbitrary φ to check the limits φ → ±∞.
func controlled(dst []float32, J Jacobian, grad Gradient, K, je []float64, on bool, phi float64, workers int) (lambda []float64, vnorm float64, err error) {
	m := J.M
	a := make([]float64, m)
	copy(a, grad.Coef)
	if on {
		b := make([]float64, m)
		for i := 0; i < m; i++ {
			s := -phi
			if je != nil {
				s += je[i]
			}
			for j, c := range grad.Coef {
				s += K[i*m+j] * c
			}
			b[i] = s
		}
		lambda, err = SolveDual(K, m, b)
		if err != nil {
			return nil, 0, fmt.Errorf("png: PNG dual with φ = %g: %w", phi, err)
		}
		for i, l := range lambda {
			a[i] += l
		}
	}
	vnorm = combine(dst, J, a, grad.Extra, workers)
	return lambda, vnorm, finishNorm(vnorm)
}

// TradeOK reports whether a step whose first-order loss rates are q
// (q_i = ∇ℓ_iᵀv: positive where ℓ_i falls along −v) raises the losses by
// at most M times what it lowers them: Σ max(−q_i, 0) ≤ M·Σ max(q_i, 0).
// A step that changes no loss is a trade; one that only raises losses is
// not (Settings.MaxTradeoff).
func TradeOK(q []float64, M float64) bool {
	var up, down float64
	for _, x := range q {
		if x < 0 {
			up -= x
		} else {
			down += x
		}
	}
	return up <= M*down
}

// freeRates returns q = Jv for the free step v = Jᵀcoef + Extra: q = K·coef
// + je (je = J·Extra, nil for none).
func freeRates(K, je, coef []float64, m int) []float64 {
	q := make([]float64, m)
	for i := range q {
		if je != nil {
			q[i] = je[i]
		}
		for j, c := range coef {
			q[i] += K[i*m+j] * c
		}
	}
	return q
}
