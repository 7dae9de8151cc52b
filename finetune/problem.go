// Package finetune owns the training loop: batches, the criterion, the
// PNG (or baseline) direction, optimizers, validation, logs, checkpoints and
// recovery from non-finite steps. It trains anything that implements
// Problem: an ONNX model through backend, or a synthetic problem. A
// criterion may also read terms (TermProblem) and drift, ‖θ − θ₀‖²; their
// gradients reach the direction as png.Gradient.Extra (terms.go).
//
// With momentum SGD or Adam and the control on, the loop asks the
// optimizer for its proposal for the PNG direction and its diagonal metric
// (optimizer.go) and makes png.PNG.Constrain's update instead, so PNG's
// guarantee holds for the step actually taken; the log's "dloss" records
// ∇ℓ_iᵀΔθ of every step to check it. A model whose loss rises past
// ℓ_i(0) + ρ·max_j |ℓ_j(0)| (Settings.DivergeFactor) is rolled back like a
// non-finite step and, when that does not help, fails the run with a
// *DivergedError, so a diverged model is never a result.
package finetune

import (
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
)

// Batch binds array names (model inputs and loss targets) to arrays. The
// first dimension of every array is the example index. Problems without
// data ignore it. It is an alias so that packages below finetune (backend,
// models/synthetic) implement Problem without importing finetune.
type Batch = map[string]*importer.Tensor

// Meter accumulates task metrics over the batches of one validation pass
// (Settings.ValMeter): Add sees every batch in order, Result gives the
// metrics pooled over the pass, by task and metric name.
type Meter interface {
	Add(b Batch) error
	Result() map[string]map[string]float64
}

// Problem is what the loop trains: m task losses of a flat float32 parameter
// vector, and their gradients.
type Problem interface {
	// Tasks returns the m task names, in loss order.
	Tasks() []string
	// NumParams returns n, the length of the parameter vector.
	NumParams() int
	// Params copies the current parameters into dst (len n).
	Params(dst []float32)
	// SetParams replaces the parameters with src (len n).
	SetParams(src []float32) error
	// Evaluate computes the m task losses on b into losses and, when jac is
	// not nil, the task gradients into jac (m×n). A non-finite loss may be
	// returned as a value or as an error matching png.ErrNonFinite
	// (errors.Is); either way the loop rolls the step back and retries.
	Evaluate(b Batch, losses []float64, jac *png.Jacobian) error
}

// SharedParams is a Problem that lets the loop train its parameter
// vector in place: Theta returns that vector itself (len n, or nil when
// the problem does not share it). The loop then keeps no copy of θ; it
// writes every update into the vector, calls SetParams on it no more,
// and a Result's Params is the vector (PointResult.Params). For the full
// MTAN that is 177 MB less at the peak, and another 177 MB at the end of
// the run.
type SharedParams interface {
	Problem
	Theta() []float32
}

// ScratchLender is a Problem that lends the loop the vectors it needs
// only between two evaluations (the step's direction, the optimizer's
// proposal, metric and trust region: LentVectors of them), from memory its
// evaluations use and leave idle in between (the ONNX backend's pool of
// activation buffers), instead of the loop holding them beside it. Lends
// reports whether it lends at all. Lend returns a buffer of n values,
// contents undefined; TakeBack returns one, which the loop no longer
// touches. The loop takes them back before every evaluation.
type ScratchLender interface {
	Problem
	Lends() bool
	Lend(n int) []float32
	TakeBack(b []float32)
}

// LentVectors is how many of the LoopVectors a ScratchLender lends.
const LentVectors = 4

// LoopVectors is the most n-vectors of float32 the training loop holds per
// model beside J, with Adam and PNG's constrained update of its proposal
// (png.Constrainer), when the problem shares its parameter vector
// (SharedParams; one more, the loop's copy of θ, when it does not): the
// direction and the pending update's, θ before the pending update, Adam's
// two moments, the proposal (the constrained update is written over it),
// the pending update, the metric and the trust region; LentVectors of
// them (the direction, the proposal, the metric and the trust region) are
// lent by a ScratchLender and held only between evaluations. A criterion that
// reads drift adds θ₀ and one more vector (Gradient.Extra), terms their
// Jacobian and that vector: tune's plan adds them (job.TuneLoopBytes).
// TestLoopVectorsCounted holds the loop to it.
const LoopVectors = 9

// TermProblem is a Problem that also computes terms: losses a criterion
// may use by name that are not tasks (a discrepancy from an extra head,
// say). Terms take no part in the Pareto set, g(θ), the threshold or the
// dual; their gradients enter only ∇F, outside the span of the task
// gradients (png.Gradient.Extra). The loop uses EvaluateTerms instead of
// Evaluate when Terms is not empty.
type TermProblem interface {
	Problem
	// Terms returns the t term names, in order.
	Terms() []string
	// EvaluateTerms is Evaluate that also writes the t term values on b
	// into terms and, when jac is not nil, their gradients into tjac
	// (t×n; jac and tjac are nil together). Non-finite values are
	// reported as Evaluate reports them.
	EvaluateTerms(b Batch, losses, terms []float64, jac, tjac *png.Jacobian) error
}
