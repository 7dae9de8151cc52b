// Package finetune owns the training loop: batches, the criterion, the
// PNG (or baseline) direction, optimizers, validation, logs, checkpoints and
// recovery from non-finite steps. It trains anything that implements
// Problem: an ONNX model through backend, or a synthetic problem.
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
