package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/png"
)

// Flags shared by the training commands. Flags whose default differs
// between commands (--lr, --steps, --gamma) are built per command with
// the helpers below.
var (
	jsonFlag = &ucli.BoolFlag{Name: "json", Usage: "print exactly one JSON object instead of the summary", Category: "Output"}
	seedFlag = &ucli.Int64Flag{Name: "seed", Value: 1, Usage: "random seed (shuffles, initial noise)", Category: "Training"}

	methodFlag  = &ucli.StringFlag{Name: "method", Value: "png", Usage: "update direction: png, mgd or linear", Category: "Method"}
	weightsFlag = &ucli.StringFlag{Name: "weights", Usage: "task weights of --method linear, one per task as `W1,W2,...` (default: equal)", Category: "Method"}
	alphaFlag   = &ucli.Float64Flag{Name: "alpha", Value: png.DefaultAlpha, Usage: "PNG's α: the control φ = α·g", Category: "Method"}

	criterionFlag = &ucli.StringFlag{Name: "criterion", Usage: "what to descend inside the Pareto set; `SPEC` is an expression over the task names or a preset (wd:r1,r2 / ratio:r1,r2 / cosine:r1,r2 / energy with --models)", Category: "Method"}

	traceFlag = &ucli.PathFlag{Name: "trace", Usage: "write a per-step CSV trace (step, losses, F, g, e, control) to `FILE.csv`", Category: "Output"}
	logFlag   = &ucli.PathFlag{Name: "log", Usage: "write a JSON-lines log (configuration, then one object per step) to `FILE.jsonl`", Category: "Output"}

	// Flags of the long runs (tune, front).
	lrScheduleFlag      = &ucli.StringFlag{Name: "lr-schedule", Value: "constant", Usage: "learning-rate `SCHEDULE`: constant, cosine or step", Category: "Training"}
	epochsFlag          = &ucli.IntFlag{Name: "epochs", Usage: "passes over --data when --steps is 0", Category: "Training"}
	csvFlag             = &ucli.PathFlag{Name: "csv", Usage: "write a per-step CSV trace to `FILE.csv`", Category: "Output"}
	checkpointEveryFlag = &ucli.IntFlag{Name: "checkpoint-every", Usage: "write a checkpoint every `K` steps", Category: "Output"}
)

func gammaFlag(def float64) *ucli.Float64Flag {
	return &ucli.Float64Flag{Name: "gamma", Value: def, Usage: "PNG's γ: the control is on while g > γ·ē", Category: "Method"}
}

func lrFlag(def float64) *ucli.Float64Flag {
	return &ucli.Float64Flag{Name: "lr", Value: def, Usage: "learning rate ξ", Category: "Training"}
}

func stepsFlag(def int) *ucli.IntFlag {
	return &ucli.IntFlag{Name: "steps", Value: def, Usage: "number of steps", Category: "Training"}
}

// methodFromFlags builds the png.Method named by --method from --alpha,
// --gamma and --weights.
func methodFromFlags(c *ucli.Context, tasks []string) (png.Method, error) {
	switch name := c.String(methodFlag.Name); name {
	case "png":
		return png.PNG{Settings: png.Settings{Alpha: c.Float64(alphaFlag.Name), Gamma: c.Float64("gamma")}}, nil
	case "mgd":
		return png.MGD{}, nil
	case "linear":
		var w []float64
		if s := c.String(weightsFlag.Name); s != "" {
			var err error
			if w, err = parseFloats("--weights", s); err != nil {
				return nil, err
			}
			if len(w) != len(tasks) {
				return nil, fmt.Errorf("--weights %q: %d weights, want one per task (%s)", s, len(w), strings.Join(tasks, ", "))
			}
		}
		return png.Linear{Weights: w}, nil
	default:
		return nil, fmt.Errorf("--method %q: want png, mgd or linear", name)
	}
}

// parseFloats reads a comma-separated list of numbers given to flag.
func parseFloats(flag, s string) ([]float64, error) {
	parts := strings.Split(s, ",")
	out := make([]float64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil, fmt.Errorf("%s %q: item %d (%q) is not a number", flag, s, i+1, strings.TrimSpace(p))
		}
		out[i] = v
	}
	return out, nil
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
