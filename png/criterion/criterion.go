package criterion

// Criterion is a scalar function F of the m task losses with its exact
// gradient.
type Criterion interface {
	// Tasks returns the task names, in the order of the loss vector.
	Tasks() []string
	// Eval returns F(ℓ) and writes ∂F/∂ℓ into grad (len m) when grad is
	// not nil. Log of a non-positive number, division by zero and other
	// domain errors are returned as errors, never as NaN.
	Eval(losses, grad []float64) (float64, error)
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
