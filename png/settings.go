package png

import (
	"fmt"
	"math"
)

// Defaults of Settings, used where a field is zero.
const (
	// DefaultAlpha is the paper's α: the control φ = α·g asks every task
	// loss to decrease at least at half the rate MGD would guarantee.
	DefaultAlpha = 0.5
	// DefaultGamma is the paper's γ for real models (its synthetic
	// experiments use 0.01).
	DefaultGamma = 0.1
	// DefaultDiscount is the discount β of the average ē: a memory of about
	// 1/(1−β) = 10 steps. The threshold must follow the gradient scale as it
	// shrinks over training (a long memory would keep e large and the
	// control off near the front) while smoothing the minibatch noise of
	// a single ‖∇ℓ_i‖² (β = 0 would make e jump with every batch); 0.9 is
	// the usual first-moment discount of Adam and sits between the two.
	DefaultDiscount = 0.9
	// RobustThresholdCap is the ρ of Settings.ThresholdCap we recommend
	// for training real models, from scratch in particular: e = γ·ē alone
	// is relative, so when every gradient explodes (a model leaving the
	// front, a diverging run) ē explodes with it and g ≤ e can hold far
	// from the front, switching the control off exactly when it is needed.
	// The cap must leave healthy training alone and catch explosions.
	// Measured (LeNet2 on MultiMNIST from scratch, 5 models, 300
	// Adam steps): in a diverging run g reached 4·10⁶, about
	// 4·10⁷·ē_W; ρ = 100 and ρ = 1000 left the healthy run (seed 1)
	// bit-identical to the uncapped one, and ρ = 100 turned the control
	// back on during a loss's runaway (seed 2) where ρ = 1000 did not; ρ =
	// 10 capped the healthy run from step 30 on. It is not the default: on
	// problems whose gradients legitimately grow by more (zdt2v: g ≈ 10⁶
	// near its optimum) a cap keeps the control on and changes the paper's
	// method.
	RobustThresholdCap = 100
	// RobustMaxTradeoff is the M of Settings.MaxTradeoff we recommend for
	// real models: an off-control step may raise the losses by at most
	// ten times what it lowers them. Where one task's loss has reached
	// its floor its gradient vanishes, g ≈ 0 and the control stays off
	// however bad the other losses are (a weakly Pareto-optimal point),
	// and a criterion that wants that loss lower (the energy at an end of
	// the front) can only raise the others: measured (LeNet2
	// from scratch, seed 2), a model's right loss rose from 0.14 to 25 in
	// 70 steps while its left loss stayed at 0.02–0.08. Along the front of
	// MultiMNIST's losses a trade costs about one unit for one; ten leaves
	// such trades alone.
	RobustMaxTradeoff = 10
)

// Settings configures PNG. The zero value of every field means its default,
// so PNG{} is the paper's method.
type Settings struct {
	// Alpha is α in the control φ = α·g(θ). Zero means DefaultAlpha. Any
	// finite value is allowed: α → −∞ approaches plain descent on F and
	// α → +∞ approaches MGD.
	Alpha float64
	// Gamma is γ in the threshold e = γ·ē: the control is on only while
	// g(θ) > e. Zero means DefaultGamma; it must not be negative.
	Gamma float64
	// Discount is β in ē ← (β·W·ē + x)/(β·W + 1), W ← β·W + 1, the
	// bias-corrected discounted average of x = trace(K)/m = (1/m)Σ‖∇ℓ_i‖².
	// Zero means DefaultDiscount; it must lie in (0, 1).
	Discount float64
	// ThresholdCap is ρ in the threshold e = γ·min(ē, ρ·ē_W), where ē_W
	// is ē after the first W = ⌈1/(1−β)⌉ steps (the memory of the
	// average); before then e = γ·ē. Zero (the default) means no cap: the
	// paper's e = γ·ē. See RobustThresholdCap.
	ThresholdCap float64
	// MaxTradeoff is M in the trade test: with the control off (g ≤ e),
	// the step v = ∇F is taken only when, to first order, it raises the
	// task losses by at most M times what it lowers them (TradeOK on
	// q = Jv); otherwise the control is turned on (φ = α·g ≥ 0), so no
	// loss rises. It keeps the criterion from walking a model off along a
	// weakly Pareto-optimal set, where a vanished gradient makes g ≈ 0
	// (see RobustMaxTradeoff): Geoffrion's proper Pareto optimality,
	// trade-offs bounded by M. Zero (the default) means no test: the
	// paper's method.
	MaxTradeoff float64
	// Workers is the number of goroutines of the passes over J. Zero means
	// runtime.NumCPU(); it must not be negative.
	Workers int
}

// WithDefaults returns s with its zero Alpha, Gamma and Discount replaced
// by their defaults: the settings PNG runs with. It is the one place these
// defaults are taken; what reports the settings (a run's log) reads them
// from here. It does not check the values (PNG does, before a step).
func (s Settings) WithDefaults() Settings {
	if s.Alpha == 0 {
		s.Alpha = DefaultAlpha
	}
	if s.Gamma == 0 {
		s.Gamma = DefaultGamma
	}
	if s.Discount == 0 {
		s.Discount = DefaultDiscount
	}
	return s
}

// resolve returns s with defaults filled in, or an error naming the
// offending field.
func (s Settings) resolve() (Settings, error) {
	s = s.WithDefaults()
	switch {
	case math.IsNaN(s.Alpha) || math.IsInf(s.Alpha, 0):
		return s, fmt.Errorf("png: Settings.Alpha = %v, want a finite number", s.Alpha)
	case !(s.Gamma >= 0) || math.IsInf(s.Gamma, 0):
		return s, fmt.Errorf("png: Settings.Gamma = %v, want a finite number ≥ 0", s.Gamma)
	case !(s.Discount > 0 && s.Discount < 1):
		return s, fmt.Errorf("png: Settings.Discount = %v, want 0 < β < 1", s.Discount)
	case !(s.ThresholdCap >= 0) || math.IsInf(s.ThresholdCap, 0):
		return s, fmt.Errorf("png: Settings.ThresholdCap = %v, want a finite number ≥ 0 (0: no cap)", s.ThresholdCap)
	case !(s.MaxTradeoff >= 0) || math.IsInf(s.MaxTradeoff, 0):
		return s, fmt.Errorf("png: Settings.MaxTradeoff = %v, want a finite number ≥ 0 (0: no test)", s.MaxTradeoff)
	case s.Workers < 0:
		return s, fmt.Errorf("png: Settings.Workers = %d, want ≥ 0 (0 = all CPUs)", s.Workers)
	}
	return s, nil
}

// observe returns the state after one more observation x of
// (1/m)Σ‖∇ℓ_i‖² with discount beta: the weights β^k of the past
// observations are normalised by their sum W, so ē has no bias toward its
// zero start.
func (s State) observe(x, beta float64) State {
	w := beta*s.Weight + 1
	return State{
		AvgSqNorm: (beta*s.Weight*s.AvgSqNorm + x) / w,
		Weight:    w,
		Steps:     s.Steps + 1,
		Cap:       s.Cap,
	}
}

// threshold returns the state with its cap set once the warm-up is over
// and the threshold e = γ·min(ē, cap) (γ·ē without a cap).
func (s State) threshold(set Settings) (State, float64) {
	ebar := s.AvgSqNorm
	if set.ThresholdCap > 0 {
		if s.Cap == 0 && s.Steps >= warmupSteps(set.Discount) {
			s.Cap = set.ThresholdCap * ebar
		}
		if s.Cap > 0 {
			ebar = math.Min(ebar, s.Cap)
		}
	}
	return s, set.Gamma * ebar
}

// warmupSteps is W = ⌈1/(1−β)⌉, the memory of the discounted average.
func warmupSteps(beta float64) int { return int(math.Ceil(1/(1-beta) - 1e-9)) }
