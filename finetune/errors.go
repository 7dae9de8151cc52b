package finetune

import (
	"errors"
	"fmt"
)

// ErrNonFinite is the sentinel matched (errors.Is) by every *NonFiniteError.
var ErrNonFinite = errors.New("finetune: non-finite value")

// NonFiniteError reports a step whose losses, gradients, criterion or
// update stayed non-finite after Retries rollbacks with a halved learning
// rate.
type NonFiniteError struct {
	Step    int    // the step (1-based) that could not be completed
	Model   int    // the point (model) where it was seen; 0 for Run
	What    string // "loss", "gradient", "criterion", "direction" or "parameters"
	Retries int    // rollbacks tried before giving up
	Err     error  // the underlying error (a criterion domain error), may be nil
}

// Error says which step, model and value went non-finite, and after how
// many retries.
func (e *NonFiniteError) Error() string {
	msg := fmt.Sprintf("finetune: step %d: non-finite %s", e.Step, e.What)
	if e.Model > 0 {
		msg = fmt.Sprintf("finetune: step %d, model %d: non-finite %s", e.Step, e.Model, e.What)
	}
	if e.Retries > 0 {
		msg += fmt.Sprintf(" after %d retries with a halved learning rate", e.Retries)
	} else {
		msg += " (no earlier good parameters to return to)"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrNonFinite) true.
func (e *NonFiniteError) Is(target error) bool { return target == ErrNonFinite }

// Unwrap returns the underlying error.
func (e *NonFiniteError) Unwrap() error { return e.Err }

// ErrDiverged is the sentinel matched (errors.Is) by every *DivergedError.
var ErrDiverged = errors.New("finetune: model diverged")

// DivergedError reports a model whose task loss rose past its bound
// ℓ_i(0) + ρ·max_j |ℓ_j(0)| (Settings.DivergeFactor) and stayed there
// after Retries rollbacks with a halved learning rate.
type DivergedError struct {
	Step    int     // the step (1-based) that could not be completed
	Model   int     // the model that diverged (0 for Run)
	Task    string  // the task whose loss rose past its bound
	Loss    float64 // its loss on the step's batch
	Initial float64 // its loss at the first step
	Bound   float64 // the bound it exceeded
	Retries int     // rollbacks tried before giving up
}

// Error names the model, step and task, and says how far the loss rose.
func (e *DivergedError) Error() string {
	msg := fmt.Sprintf("finetune: step %d, model %d diverged: loss %s = %.4g rose past %.4g (it started at %.4g)",
		e.Step, e.Model, e.Task, e.Loss, e.Bound, e.Initial)
	if e.Retries > 0 {
		msg += fmt.Sprintf(", still after %d retries with a halved learning rate", e.Retries)
	} else {
		msg += " (no earlier good parameters to return to)"
	}
	return msg + "; try a smaller --lr"
}

// Is makes errors.Is(err, ErrDiverged) true.
func (e *DivergedError) Is(target error) bool { return target == ErrDiverged }

// InterruptedError is returned with Status Interrupted when the context is
// cancelled. Checkpoint names the file written, if any.
type InterruptedError struct {
	Step       int    // steps completed
	Checkpoint string // checkpoint written on the way out ("" when none)
	Err        error  // the context's error
}

// Error says after which step the run stopped, the checkpoint written and
// the context's reason.
func (e *InterruptedError) Error() string {
	msg := fmt.Sprintf("finetune: interrupted after step %d", e.Step)
	if e.Checkpoint != "" {
		msg += fmt.Sprintf(" (checkpoint %s)", e.Checkpoint)
	}
	return msg + ": " + e.Err.Error()
}

// Unwrap returns the context's error (context.Canceled or
// context.DeadlineExceeded).
func (e *InterruptedError) Unwrap() error { return e.Err }

// ExitCode is 130, the shell's code for a process stopped by SIGINT.
func (e *InterruptedError) ExitCode() int { return 130 }

// ErrNegativeLoss is the sentinel matched (errors.Is) by every
// *NegativeLossError.
var ErrNegativeLoss = errors.New("finetune: negative task loss")

// NegativeLossError reports a task loss below zero on the first batch,
// found before the first step. PNG's criteria (products, ratios, logs of
// losses, the presets' distances to reference losses) assume every task
// loss is nonnegative, so a negative one means the loss is not what the
// task's definition expects (log-probabilities where logits are, say).
type NegativeLossError struct {
	Model int     // the model (1-based) for several models, 0 for Run
	Task  string  // the task whose loss is negative
	Loss  float64 // its loss on the first batch
}

// Error names the task and its loss.
func (e *NegativeLossError) Error() string {
	where := ""
	if e.Model > 0 {
		where = fmt.Sprintf("model %d, ", e.Model)
	}
	return fmt.Sprintf("finetune: %stask %s: loss %.4g on the first batch is negative; criteria assume nonnegative task losses", where, e.Task, e.Loss)
}

// Is makes errors.Is(err, ErrNegativeLoss) true.
func (e *NegativeLossError) Is(target error) bool { return target == ErrNegativeLoss }
