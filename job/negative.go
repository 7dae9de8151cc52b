package job

import (
	"errors"
	"fmt"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
)

// explainNegative adds to a *finetune.NegativeLossError the task's loss
// kind and output and what the loss kind expects of them; other errors
// pass through unchanged.
func explainNegative(err error, tasks []backend.Task) error {
	var ne *finetune.NegativeLossError
	if !errors.As(err, &ne) {
		return err
	}
	for _, t := range tasks {
		if t.Name != ne.Task {
			continue
		}
		hint := ""
		switch t.Loss {
		case "nll":
			hint = fmt.Sprintf("; nll reads log-probabilities (≤ 0, a log_softmax output): if %q holds raw scores (logits), use the loss ce", t.Output)
		case "output":
			hint = fmt.Sprintf("; the loss \"output\" takes the value of %q as the loss: make the model's loss nonnegative", t.Output)
		}
		model := ""
		if ne.Model > 0 {
			model = fmt.Sprintf("model %d, ", ne.Model)
		}
		return &wrapped{msg: fmt.Sprintf("%stask %s (loss %s on output %q): loss %.4g on the first batch is negative; criteria assume nonnegative task losses%s",
			model, t.Name, t.Loss, t.Output, ne.Loss, hint), err: err}
	}
	return err
}

// wrapped is an error with its own message that still matches the error
// it explains (errors.Is, errors.As).
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }
