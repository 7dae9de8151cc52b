package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/paretonav/paretonav/internal/termsafe"
	"github.com/paretonav/paretonav/job"
	ucli "github.com/urfave/cli/v2"
)

var evalCommand = withInterspersed(withConfig(&ucli.Command{
	Name:      "eval",
	Usage:     "task losses and g(θ) of an ONNX model on data (NPZ, .npy, IDX)",
	ArgsUsage: "MODEL.onnx",
	Description: `Evaluates every --task on the first --limit examples of --data (default
all), in file order, --batch at a time. Model inputs are read from the arrays
of the same names (--map input=array to rename); task targets from the arrays
the tasks name. Losses are the batch means averaged over batches weighted by
batch size, and so are the task gradients, from which g(θ) = min over the
simplex of |Σ ω_i ∇ℓ_i|² is computed (0 on the Pareto set). Tasks with
metrics get them pooled over every evaluated pixel ("metrics" in --json; by
loss kind, as paretonav losses lists them):

` + metricsByKind() + `

--grad-out writes the gradients as an NPZ: array "TASK/INITIALIZER" is the
gradient of that task's mean loss with respect to that trainable initializer
(float32, its shape; zeros where the task does not reach it).`,
	Flags: []ucli.Flag{verboseFlag,
		dataFlag, taskFlag, mapFlag, bnFlag, freezeFlag, maxMemoryFlag, batchFlag(job.EvalBatch),
		&ucli.IntFlag{Name: "limit", Usage: "use the first `N` examples (0: all)", Category: "Data"},
		&ucli.PathFlag{Name: "grad-out", Usage: "write the task gradients to `G.npz`", Category: "Output"},
		&ucli.BoolFlag{Name: "force", Usage: "replace --grad-out if it exists (never an input)", Category: "Output"},
		jsonFlag,
	},
	Action: runEval,
}))

func init() { register(evalCommand) }

// evalJSON is what eval --json prints.
type evalJSON = job.EvalOutcome

func runEval(c *ucli.Context) error {
	args := positional(c)
	if len(args) != 1 {
		return fmt.Errorf("eval: want one MODEL.onnx argument, got %d (%s)", len(args), strings.Join(args, " "))
	}
	run, err := evalConfigFromFlags(c, args[0]).Prepare(nil)
	if err != nil {
		return err
	}
	printWarnings(c, run.Warnings)
	if verbose(c) && !c.Bool(jsonFlag.Name) {
		fmt.Fprintln(c.App.ErrWriter, run.Memory)
	}
	res, err := run.Run()
	if err != nil {
		return err
	}
	if c.Bool(jsonFlag.Name) {
		return writeJSON(c.App.Writer, res)
	}
	return evalSummary(c.App.Writer, args[0], res.Eval, res.Names, res.GradOut)
}

// evalConfigFromFlags reads eval's flags into a job configuration for
// model.
func evalConfigFromFlags(c *ucli.Context, model string) *job.EvalConfig {
	return &job.EvalConfig{Model: model, Data: c.StringSlice(dataFlag.Name), ModelConfig: modelConfigFromFlags(c),
		Batch: c.Int("batch"), Limit: c.Int("limit"), GradOut: c.Path("grad-out"), Force: c.Bool("force"),
		ConfigFile: c.Path(configFlag.Name)}
}

func evalSummary(w io.Writer, model string, res *job.DataEval, names []string, gradOut string) error {
	w = termsafe.NewWriter(w) // names from the model, data and jobs files
	fmt.Fprintf(w, "%s on %d examples:\n", model, res.Examples)
	for i, n := range names {
		fmt.Fprintf(w, "  %-12s %.6f\n", n, res.Losses[i])
	}
	fmt.Fprintf(w, "  g(θ)         %.4g\n", res.G)
	job.WriteMetrics(w, "", names, job.NumMetrics(res.Metrics))
	if gradOut != "" {
		fmt.Fprintf(w, "gradients written to %s\n", gradOut)
	}
	return nil
}
