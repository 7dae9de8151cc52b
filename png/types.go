package png

import "github.com/paretonav/paretonav/internal/hugepages"

// Jacobian holds the m task gradients of an n-parameter model, row-major in
// float32: row i is ∇ℓ_i. Arithmetic on it accumulates in float64.
type Jacobian struct {
	M, N int
	Data []float32 // len M*N
}

// NewJacobian allocates a zero m×n Jacobian.
func NewJacobian(m, n int) Jacobian {
	d := make([]float32, m*n)
	hugepages.Advise(d)
	return Jacobian{M: m, N: n, Data: d}
}

// Row returns ∇ℓ_i, sharing storage with j.
func (j Jacobian) Row(i int) []float32 { return j.Data[i*j.N : (i+1)*j.N] }

// Gradient is the criterion's gradient ∇F at θ: Jᵀ·Coef + Extra. Coef (m
// values, ∂F/∂ℓ) covers a criterion of the losses only; Extra (n values)
// is the part of ∇F that depends on θ directly. Either may be nil.
//
// Losses are the task losses ℓ at θ (m values), for the methods that read
// them (EPO's preference ray); PNG, MGD and Linear ignore them, and a nil
// Losses is an error only for EPO.
type Gradient struct {
	Coef   []float64
	Extra  []float32
	Losses []float64
}

// Info records what one direction computation found. PNG fills every
// field; MGD and Linear fill G, Omega and VNorm.
type Info struct {
	G         float64 // g(θ) = min over the simplex of ωᵀKω
	E         float64 // threshold e = γ·min(ē, State.Cap)
	Phi       float64 // control φ = α·g (0 when the control is off)
	ControlOn bool    // g > e, or an improper trade (Improper): the dual QP was solved
	// Improper is set when g ≤ e but the step ∇F would have raised the
	// task losses by more than Settings.MaxTradeoff times what it lowers
	// them (first order), so the control was turned on (see TradeOK).
	Improper bool
	// Held is set on an improper trade at a Pareto-stationary point whose
	// gradients oppose each other: no step lowers the losses that gain
	// without raising the others (the dual QP is unbounded), so the point
	// holds still this step (v = 0).
	Held   bool
	Lambda []float64 // dual variables (m), zero when the control is off
	Omega  []float64 // min-norm weights on the simplex (m)
	VNorm  float64   // ‖v‖

	// EPO only (zero for the other methods): the mode of the step
	// ("balance", "descent" or "descent-relaxed", see EPO), the
	// non-uniformity μ of r⊙ℓ, and the LP's weights β on the simplex
	// (v = Jᵀβ). EPO sets ControlOn in balance mode.
	Mode string
	Mu   float64
	Beta []float64
}

// State is what a method carries from step to step: the discounted average
// ē of (1/m)Σ‖∇ℓ_i‖² used by the threshold e = γ·min(ē, Cap). The zero value is the
// state before the first step. PNG updates it on every successful call
// (MGD and Linear leave it alone): with x = trace(K)/m of the step and
// discount β, Weight ← β·Weight + 1 and AvgSqNorm ← (β·W·ē + x)/Weight,
// where W is the old Weight; that is Σ_k β^k x_{t−k} / Σ_k β^k, free of the
// zero-start bias of a plain exponential average.
type State struct {
	AvgSqNorm float64 // ē, bias-corrected
	Weight    float64 // Σ_k β^k over the steps so far (→ 1/(1−β))
	Steps     int     // number of steps observed
	// Cap is ρ·ē at the end of the warm-up (Settings.ThresholdCap), the
	// most ē counts for in the threshold; 0 until then or without a cap.
	Cap float64
	// FirstSteps counts the directions a Staged method took with its
	// First method.
	FirstSteps int
}

// Method computes an update direction v (written into dst, n values) from
// the task gradients J and the criterion's gradient. Implementations: PNG,
// MGD, Linear and EPO. The caller moves θ ← θ − ξ·v (or hands v to an optimizer).
type Method interface {
	Direction(dst []float32, J Jacobian, grad Gradient, st *State) (Info, error)
}
