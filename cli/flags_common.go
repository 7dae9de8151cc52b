package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/job"
	"github.com/paretonav/paretonav/png"
)

// Flags shared by the training commands. Flags whose default differs
// between commands (--lr, --steps, --gamma) are built per command with
// the helpers below.
var (
	jsonFlag = &ucli.BoolFlag{Name: "json", Usage: "print exactly one JSON object instead of the summary", Category: "Output"}
	seedFlag = &ucli.Int64Flag{Name: "seed", Value: 1, Usage: "random `SEED` (shuffles, initial noise)", Category: "Training"}

	methodFlag     = &ucli.StringFlag{Name: "method", Value: "png", Usage: "the update direction `METHOD`: png, mgd, linear or epo", Category: "Method"}
	weightsFlag    = &ucli.StringFlag{Name: "weights", Usage: "task weights of --method linear, one per task as `W1,W2,...` (default: equal)", Category: "Method"}
	mgdStepsFlag   = &ucli.IntFlag{Name: "mgd-steps", Usage: "follow MGD for the first `N` steps, then --method (the paper's complex-cosine protocol on ZDT2-variant uses 150)", Category: "Method"}
	preferenceFlag = &ucli.StringFlag{Name: "preference", Usage: "preference of --method epo, one positive weight per task as `R1,R2,...`: EPO seeks R1·ℓ1 = R2·ℓ2 = … (default: 1 each)", Category: "Method"}
	alphaFlag      = &ucli.Float64Flag{Name: "alpha", Value: png.DefaultAlpha, Usage: "PNG's `α`: the control φ = α·g", Category: "Method"}

	criterionFlag = &ucli.StringFlag{Name: "criterion", Usage: "what to descend inside the Pareto set; `SPEC` is an expression over the task names, the --term names and drift (‖θ − θ₀‖², the distance from the starting weights), a preset (wd:r1,r2 / ratio:r1,r2 / cosine:r1,r2 / energy with --models), or presets inside an expression (wd:0.2,0.8 + 0.01*drift)", Category: "Method"}

	traceFlag = &ucli.PathFlag{Name: "trace", Usage: "write a per-step CSV trace (step, losses, F, g, e, control) to `FILE.csv`", Category: "Output"}
	logFlag   = &ucli.PathFlag{Name: "log", Usage: "write a JSON-lines log (configuration, then one object per step) to `FILE.jsonl`", Category: "Output"}

	// Flags of the long runs (tune, front).
	lrScheduleFlag      = &ucli.StringFlag{Name: "lr-schedule", Value: "constant", Usage: "learning-rate `SCHEDULE`: constant, cosine or step", Category: "Training"}
	epochsFlag          = &ucli.IntFlag{Name: "epochs", Usage: "make `N` passes over --data when --steps is 0", Category: "Training"}
	csvFlag             = &ucli.PathFlag{Name: "csv", Usage: "write a per-step CSV trace to `FILE.csv`", Category: "Output"}
	checkpointEveryFlag = &ucli.IntFlag{Name: "checkpoint-every", Usage: "write a checkpoint every `K` steps", Category: "Output"}
)

func gammaFlag(def float64) *ucli.Float64Flag {
	return &ucli.Float64Flag{Name: "gamma", Value: def, Usage: "PNG's `γ`: the control is on while g > γ·ē", Category: "Method"}
}

func lrFlag(def float64) *ucli.Float64Flag {
	return &ucli.Float64Flag{Name: "lr", Value: def, Usage: "learning rate `ξ`", Category: "Training"}
}

func stepsFlag(def int) *ucli.IntFlag {
	return &ucli.IntFlag{Name: "steps", Value: def, Usage: "number of steps `N`", Category: "Training"}
}

// methodConfigFromFlags reads --method, --alpha, --gamma, --weights,
// --preference and --mgd-steps.
func methodConfigFromFlags(c *ucli.Context) job.MethodConfig {
	return job.MethodConfig{Name: c.String(methodFlag.Name), Alpha: c.Float64(alphaFlag.Name),
		Gamma: c.Float64("gamma"), Weights: c.String(weightsFlag.Name), Preference: c.String(preferenceFlag.Name),
		MGDSteps: c.Int(mgdStepsFlag.Name)}
}

// methodFromFlags builds the png.Method named by --method from --alpha,
// --gamma and --weights.
func methodFromFlags(c *ucli.Context, tasks []string) (png.Method, error) {
	return methodConfigFromFlags(c).Build(tasks)
}

// interruption is the error of a run stopped by a signal or a cancelled
// context, in the user's words: what stopped it, after which step, and
// where its checkpoint is. It wraps the run's *finetune.InterruptedError
// (its exit code is 130).
type interruption struct {
	msg string
	err *finetune.InterruptedError
}

func (e *interruption) Error() string { return e.msg }
func (e *interruption) Unwrap() error { return e.err }

// interruptedError returns ie as an interruption of command cmd run under ctx
// (signalContext's).
func interruptedError(ctx context.Context, cmd string, ie *finetune.InterruptedError) error {
	by := "the caller"
	switch cause := context.Cause(ctx); {
	case cause == nil:
	case strings.HasPrefix(cause.Error(), os.Interrupt.String()+" "): // signal.NotifyContext's cause
		by = "an interrupt (SIGINT, Ctrl-C)"
	case strings.HasPrefix(cause.Error(), syscall.SIGTERM.String()+" "):
		by = "a termination request (SIGTERM)"
	case errors.Is(cause, context.DeadlineExceeded):
		by = "its deadline"
	case !errors.Is(cause, context.Canceled):
		by = cause.Error()
	}
	msg := fmt.Sprintf("%s interrupted by %s after step %d", cmd, by, ie.Step)
	if ie.Checkpoint != "" {
		msg += fmt.Sprintf("; checkpoint %s (continue with `paretonav %s --resume %s`)", ie.Checkpoint, cmd, job.ShellQuote(ie.Checkpoint))
	} else {
		msg += "; no checkpoint written"
	}
	return &interruption{msg: msg, err: ie}
}

// signalContext returns a context cancelled on SIGINT or SIGTERM (or when
// the command's context ends), so that a run can checkpoint and stop.
func signalContext(c *ucli.Context) (context.Context, context.CancelFunc) {
	parent := c.Context
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}
