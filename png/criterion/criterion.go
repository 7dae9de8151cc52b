package criterion

// Drift is the name of the criterion variable that measures how far the
// trainable parameters moved: ‖θ − θ₀‖², the squared L2 distance from
// their values θ₀ at the start of the run (L2-SP), with gradient 2(θ − θ₀).
// Any expression may use it ("wd:0.2,0.3 + 0.01*drift"); the caller
// computes its value.
const Drift = "drift"

// Criterion is a scalar function F of the m task losses, and possibly of
// further values of θ (terms, Drift), with its exact gradient.
type Criterion interface {
	// Tasks returns the task names, in the order of the loss vector.
	Tasks() []string
	// Eval returns F at x and writes ∂F/∂x into grad (same length) when
	// grad is not nil. x holds one value per name of VarsOf: the m task
	// losses, then whatever else the criterion reads. Log of a
	// non-positive number, division by zero and other domain errors are
	// returned as errors, never as NaN.
	Eval(x, grad []float64) (float64, error)
	// String returns the criterion as the user wrote it (normalised).
	String() string
}

// Multi is a criterion over the losses of N models at once (N×m, one row
// per model), such as the Riesz energy that spreads models over the front.
type Multi interface {
	Tasks() []string
	// EvalMulti returns F(L) and writes ∂F/∂L_k into grad[k] when grad is
	// not nil.
	EvalMulti(L [][]float64, grad [][]float64) (float64, error)
	String() string
}

// Varser is implemented by criteria that read values beyond the task
// losses: Vars returns the names of all values Eval reads, in order, the
// tasks first.
type Varser interface {
	Vars() []string
}

// VarsOf returns the names of the values c.Eval reads, in order: c.Vars()
// when c implements Varser, else c.Tasks(). The names after the tasks are
// terms and Drift.
func VarsOf(c Criterion) []string {
	if v, ok := c.(Varser); ok {
		return v.Vars()
	}
	return c.Tasks()
}
