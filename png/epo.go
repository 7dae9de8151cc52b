package png

import (
	"errors"
	"fmt"
	"math"
)

// DefaultEPOEps is EPO's default threshold on the non-uniformity μ: above
// it a step balances, at or below it a step descends. For m = 2, μ ≈ x²/2
// where r1ℓ1 − r2ℓ2 = x·(r1ℓ1 + r2ℓ2), so 1e-9 keeps the relative
// imbalance of a descent step below about 5e-5; the balance steps shrink
// with the imbalance, so a small threshold costs no oscillation.
const DefaultEPOEps = 1e-9

// EPO is Exact Pareto Optimal search (Mahapatra & Rai, ICML 2020): it
// moves toward the Pareto-optimal point on the preference ray, where
// r1ℓ1 = r2ℓ2 = … = rmℓm, and stops there. It ignores the criterion's
// gradient; it reads the losses from Gradient.Losses.
//
// Each step computes the normalised weighted losses ℓ̂_j = r_jℓ_j / Σ_s r_sℓ_s,
// their non-uniformity μ = Σ_j ℓ̂_j log(m ℓ̂_j) (the KL divergence of ℓ̂ from
// uniform), and the adjustment a_j = r_j (log(m ℓ̂_j) − μ), so that
// d_bal = Jᵀa is the gradient of μ up to the positive factor 1/Σ r_sℓ_s.
// With C = J Jᵀ (the Gram matrix K) it solves one linear program over β on
// the simplex and returns v = Jᵀβ (θ ← θ − ξv decreases ℓ_j at the rate
// (Cβ)_j):
//
//   - balance mode, μ > Eps: maximise βᵀCa (align v with d_bal) subject to
//     (Cβ)_j ≥ (Ca)_j for every j with (Ca)_j ≤ 0 (a loss may rise no faster
//     than balancing needs) and (Cβ)_j ≥ 0 for the losses with the largest
//     r_jℓ_j (they never rise); when no (Ca)_j is positive, (Cβ)_j ≥ 0 for
//     every j;
//   - descent mode, μ ≤ Eps: maximise Σ_j (Cβ)_j subject to (Cβ)_j ≥ 0 for
//     every j and βᵀCa ≥ min(0, max_j (Ca)_j) (descend without undoing the
//     balance).
//
// Both programs are solved exactly by SolveLP. The balance program and the
// relaxed descent program (without the last constraint) are always
// feasible: the min-norm point ω* has Cω* ≥ 0. The restricted descent
// program may be infeasible; the documented rule is then to solve the
// relaxed one, and Info.Mode says "descent-relaxed". A balance program
// reported infeasible (possible only through rounding) is an error.
//
// Step size: β lies on the simplex, so v keeps the size of the task
// gradients even as μ → 0. For m = 2 the balance constraints scale with a
// and the steps shrink with the imbalance (exp2 lands on the ray to 1e-5
// with a constant step). For m ≥ 3 a loss in J other than the largest is
// unconstrained, and near the ray a balance step of a constant size
// overshoots: the iterates circle the ray at a distance proportional to
// the step. A decaying step (a cosine schedule) lands on it.
//
// Info: Mode, Mu, Beta; ControlOn in balance mode; G and Omega (the
// min-norm point, for comparison with the other methods) and VNorm.
type EPO struct {
	// Preference is r, one positive weight per task; nil means 1 each.
	// EPO seeks r1ℓ1 = … = rmℓm, so a larger r_j asks for a smaller ℓ_j.
	Preference []float64
	// Eps is the threshold on μ between balance and descent; zero means
	// DefaultEPOEps.
	Eps float64
	// Workers is the number of goroutines of the passes over J; zero means
	// runtime.NumCPU().
	Workers int
}

// Direction writes v = Jᵀβ into dst. Losses missing or of the wrong
// length, a preference of the wrong length, and r_jℓ_j ≤ 0 or non-finite
// (μ needs positive weighted losses) are errors; mismatched dst and J
// panic.
func (e EPO) Direction(dst []float32, J Jacobian, grad Gradient, st *State) (Info, error) {
	checkShapes(dst, J, Gradient{})
	m := J.M
	r, err := e.preference(m)
	if err != nil {
		return Info{}, err
	}
	if len(grad.Losses) != m {
		return Info{}, fmt.Errorf("png: EPO needs the %d task losses, got %d", m, len(grad.Losses))
	}
	eps := e.Eps
	if eps == 0 {
		eps = DefaultEPOEps
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return Info{}, fmt.Errorf("png: EPO.Eps = %v, want a positive finite number (0 = %g)", e.Eps, DefaultEPOEps)
	}
	K, err := gramChecked(J, e.Workers)
	if err != nil {
		return Info{}, err
	}
	mu, a, err := EPOAdjustment(r, grad.Losses)
	if err != nil {
		return Info{}, err
	}
	omega, g := MinNorm(K, m)
	info := Info{G: g, Omega: omega, Mu: mu}
	if mu > eps {
		info.Mode, info.ControlOn = "balance", true
		info.Beta, err = epoBalance(K, a, r, grad.Losses)
		if err != nil {
			return Info{}, fmt.Errorf("png: EPO balance LP (μ = %.3g): %w", mu, err)
		}
	} else {
		info.Mode = "descent"
		info.Beta, err = epoDescent(K, a, true)
		if errors.Is(err, ErrInfeasible) {
			info.Mode = "descent-relaxed"
			info.Beta, err = epoDescent(K, a, false)
		}
		if err != nil {
			return Info{}, fmt.Errorf("png: EPO descent LP (μ = %.3g): %w", mu, err)
		}
	}
	info.VNorm = combine(dst, J, info.Beta, nil, e.Workers)
	return info, finishNorm(info.VNorm)
}

// preference returns r checked against m tasks (1 each when nil).
func (e EPO) preference(m int) ([]float64, error) {
	if e.Preference == nil {
		r := make([]float64, m)
		for i := range r {
			r[i] = 1
		}
		return r, nil
	}
	if len(e.Preference) != m {
		return nil, fmt.Errorf("png: EPO has %d preference weights for %d tasks", len(e.Preference), m)
	}
	for i, v := range e.Preference {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("png: EPO.Preference[%d] = %v, want a positive finite number", i, v)
		}
	}
	return e.Preference, nil
}

// EPOAdjustment returns EPO's non-uniformity μ = Σ_j ℓ̂_j log(m ℓ̂_j) of the
// weighted losses, ℓ̂_j = r_jℓ_j / Σ_s r_sℓ_s, and the adjustment
// a_j = r_j (log(m ℓ̂_j) − μ). Every r_jℓ_j must be positive and finite.
func EPOAdjustment(r, losses []float64) (mu float64, a []float64, err error) {
	m := len(r)
	if len(losses) != m {
		return 0, nil, fmt.Errorf("png: EPO: %d losses for %d preference weights", len(losses), m)
	}
	var sum float64
	for j := range r {
		rl := r[j] * losses[j]
		if !(rl > 0) || math.IsInf(rl, 0) {
			return 0, nil, fmt.Errorf("png: EPO: task %d has r·ℓ = %v·%v = %v, want a positive finite number (the non-uniformity needs positive losses)", j, r[j], losses[j], rl)
		}
		sum += rl
	}
	logs := make([]float64, m)
	for j := range r {
		h := r[j] * losses[j] / sum
		logs[j] = math.Log(float64(m) * h)
		mu += h * logs[j]
	}
	a = make([]float64, m)
	for j := range r {
		a[j] = r[j] * (logs[j] - mu)
	}
	return mu, a, nil
}

// epoBalance solves the balance LP (see EPO) and returns β.
func epoBalance(K, a, r, losses []float64) ([]float64, error) {
	m := len(a)
	Ca := matVec(K, a)
	top := math.Inf(-1)
	for j := range r {
		top = math.Max(top, r[j]*losses[j])
	}
	anyPos := false
	for _, v := range Ca {
		anyPos = anyPos || v > 0
	}
	p := simplexLP(Ca)
	for j := 0; j < m; j++ {
		switch {
		case !anyPos || r[j]*losses[j] == top:
			p.addRow(K[j*m:(j+1)*m], GE, 0)
		case Ca[j] <= 0:
			p.addRow(K[j*m:(j+1)*m], GE, Ca[j])
		}
	}
	beta, _, err := SolveLP(p)
	return beta, err
}

// epoDescent solves the descent LP (see EPO), restricted or relaxed, and
// returns β.
func epoDescent(K, a []float64, restricted bool) ([]float64, error) {
	m := len(a)
	obj := make([]float64, m) // (1ᵀC)_k = Σ_j C_jk
	for j := 0; j < m; j++ {
		for k := 0; k < m; k++ {
			obj[k] += K[j*m+k]
		}
	}
	p := simplexLP(obj)
	for j := 0; j < m; j++ {
		p.addRow(K[j*m:(j+1)*m], GE, 0)
	}
	if restricted {
		Ca := matVec(K, a)
		p.addRow(Ca, GE, math.Min(0, maxOf(Ca)))
	}
	beta, _, err := SolveLP(p)
	return beta, err
}

// simplexLP returns the LP maximise cᵀβ over the simplex Σβ = 1, β ≥ 0
// (plus rows added later).
func simplexLP(c []float64) LP {
	ones := make([]float64, len(c))
	for i := range ones {
		ones[i] = 1
	}
	return LP{C: c, A: [][]float64{ones}, Rel: []Relation{EQ}, B: []float64{1}}
}

func (p *LP) addRow(a []float64, rel Relation, b float64) {
	p.A = append(p.A, append([]float64(nil), a...))
	p.Rel = append(p.Rel, rel)
	p.B = append(p.B, b)
}

// matVec returns K x for the m×m row-major K.
func matVec(K, x []float64) []float64 {
	m := len(x)
	y := make([]float64, m)
	for i := 0; i < m; i++ {
		for k := 0; k < m; k++ {
			y[i] += K[i*m+k] * x[k]
		}
	}
	return y
}

func maxOf(v []float64) float64 {
	r := math.Inf(-1)
	for _, x := range v {
		r = math.Max(r, x)
	}
	return r
}
