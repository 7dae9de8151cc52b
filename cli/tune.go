package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/internal/termsafe"
	"github.com/paretonav/paretonav/job"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

var tuneCommand = withInterspersed(withConfig(&ucli.Command{
	Name:      "tune",
	Usage:     "fine-tune an ONNX model toward a criterion inside the Pareto set (PNG)",
	ArgsUsage: "MODEL.onnx",
	Description: `Trains the model's initializers with Pareto Navigation Gradient Descent:
while g(θ) (how far from Pareto-stationary the model is) stays below γ·ē, it
descends the criterion; above, it first brings every task loss down. The data
are checked against the model before the first step (missing arrays, shapes,
element types, class labels, example counts). The tuned model is written to
--out (default MODEL_tuned.onnx) atomically, with the run recorded in its
metadata. Every file the run writes (--out, --log, --csv, --plot, the
checkpoint) is checked before the first step: distinct from each other and
from every input, in a folder that exists and takes new files, not a folder
or a device; an existing file is replaced only with --force, an input never.
The log, trace and plot go to temporary files renamed at the end; if --out
cannot be written when training ends, the model is kept beside it and the
error says where. SIGINT or SIGTERM stops the run, writes a checkpoint
(--checkpoint, default OUT.ckpt) and leaves --out untouched; the checkpoint
holds the whole configuration, so "paretonav tune --resume OUT.ckpt" alone
continues the run (flags given again must agree with it), its log where it
stopped. The checkpoint is removed once the model is written unless
--keep-checkpoint. The summary says what happened and what to try: the
share of steps in the Pareto band (g ≤ e), why the control was on, why F
rose when it did, and a target beyond the Pareto front; --json holds the
same under "explanation".`,
	Flags: []ucli.Flag{verboseFlag,
		dataFlag,
		&ucli.StringSliceFlag{Name: "val", Usage: "validation data (the arrays of --data) from `SOURCE`: FILE.npz, " + sourceUsage,
			Category: "Data", TakesFile: true},
		taskFlag, termFlag, mapFlag, bnFlag, freezeFlag, untieFlag, maxMemoryFlag,
		criterionFlag, methodFlag, weightsFlag, preferenceFlag, mgdStepsFlag, alphaFlag, gammaFlag(png.DefaultGamma),
		&ucli.StringFlag{Name: "optimizer", Value: job.TuneOptimizer, Usage: "the optimizer by `NAME`: sgd or adam (the direction v is its gradient)", Category: "Training"},
		lrFlag(job.TuneLR),
		&ucli.Float64Flag{Name: "momentum", Usage: "SGD momentum `μ`", Category: "Training"},
		lrScheduleFlag,
		&ucli.IntFlag{Name: "steps", Usage: "number of steps `N`; 0 runs --epochs passes over --data instead", DefaultText: fmt.Sprintf("%d, or --epochs passes when that is set", finetune.DefaultSteps), Category: "Training"},
		epochsFlag,
		batchFlag(job.TuneBatch),
		&ucli.IntFlag{Name: "accumulate", Usage: "run each batch as `K` micro-batches, one after the other, and average their losses and gradients: the step of --batch at the memory of --batch/K", Category: "Data"},
		&ucli.IntFlag{Name: "val-every", Usage: "evaluate --val every `K` steps (0: at the end only)", Category: "Training"},
		seedFlag,
		&ucli.PathFlag{Name: "out", Usage: "write the tuned model to `OUT.onnx` (default MODEL_tuned.onnx)", Category: "Output"},
		&ucli.BoolFlag{Name: "force", Usage: "replace existing output files (--out, --log, --csv, --plot, another run's checkpoint); never an input", Category: "Output"},
		logFlag,
		csvFlag,
		&ucli.PathFlag{Name: "plot", Usage: "draw the run to `FILE.png`: F over the steps (with a moving average, and validation F with --val), g and e with the Pareto band, the task losses over the steps, and for 2 or 3 tasks the trajectory in loss space (one panel per pair of tasks)", Category: "Output"},
		checkpointEveryFlag,
		&ucli.PathFlag{Name: "checkpoint", Usage: "write checkpoints to `FILE` (default OUT.ckpt), also on interruption", Category: "Output"},
		&ucli.BoolFlag{Name: "keep-checkpoint", Usage: "keep the checkpoint after the model is written (it is removed by default)", Category: "Output"},
		&ucli.PathFlag{Name: "resume", Usage: "continue the run saved in `CKPT`: the checkpoint holds its model, data and settings; flags given again must agree", Category: "Training"},
		jsonFlag,
	},
	Action: runTune,
}))

func init() { register(tuneCommand) }

// tuneTestRecorder, when set (by tests), is added to tune's recorders.
var tuneTestRecorder finetune.Recorder

// tuneOutcome is what tune prints with --json.
type tuneOutcome = job.TuneOutcome

func runTune(c *ucli.Context) error {
	cfg, err := tuneConfigFromFlags(c)
	if err != nil {
		return err
	}
	tj, err := cfg.Prepare(nil)
	if err != nil {
		return err
	}
	tj.Progress = c.App.ErrWriter
	printWarnings(c, tj.Warnings)
	if verbose(c) && !c.Bool(jsonFlag.Name) {
		fmt.Fprintln(c.App.ErrWriter, tj.Memory)
	}
	if tuneTestRecorder != nil {
		tj.Extra = append(tj.Extra, tuneTestRecorder)
	}
	if tj.PlotPath != "" {
		s := &series{}
		tj.Extra = append(tj.Extra, s)
		title := fmt.Sprintf("%s: %s, %s", filepath.Base(tj.ModelPath), tj.Method, tj.Criterion)
		// F of the validation losses and the iso-F contours in loss space
		// need F to depend on the task losses alone.
		crit := tj.Settings.Criterion
		if len(criterion.VarsOf(crit)) > len(tj.Tasks) {
			crit = nil
		}
		tj.Plot = func(path string, res *tuneOutcome) error {
			return plotTune(path, &tunePlot{Title: title, Tasks: res.Tasks, Series: s, Crit: crit,
				Before: res.BeforeLosses, After: res.AfterLosses, MeasuredOn: tj.ReportName, Examples: res.Examples})
		}
	}
	ctx, stop := signalContext(c)
	defer stop()
	res, err := tj.Run(ctx)
	if err != nil {
		var ie *finetune.InterruptedError
		if errors.As(err, &ie) && ie.Checkpoint != "" {
			fmt.Fprintf(c.App.ErrWriter, "interrupted after step %d; %s untouched; continue with `paretonav tune --resume %s`\n",
				ie.Step, tj.Out, job.ShellQuote(ie.Checkpoint))
		}
		if res != nil && !c.Bool(jsonFlag.Name) {
			tuneSummary(c.App.Writer, res, stepLimit(c)) // the model is kept: say where before the error
		}
		if ie != nil {
			return interruptedError(ctx, "tune", ie)
		}
		return err
	}
	if c.Bool(jsonFlag.Name) {
		return writeJSON(c.App.Writer, res)
	}
	return tuneSummary(c.App.Writer, res, stepLimit(c))
}

// tuneConfigFromFlags reads tune's flags into a job configuration. With
// --resume the model argument may be left out, and the flags the command
// line or --config set are named in Given (the others come from the
// checkpoint).
func tuneConfigFromFlags(c *ucli.Context) (*job.TuneConfig, error) {
	args := positional(c)
	resume := c.Path("resume")
	if len(args) > 1 || (len(args) == 0 && resume == "") {
		return nil, fmt.Errorf("tune: want one MODEL.onnx argument (or --resume CKPT alone), got %d (%s)", len(args), strings.Join(args, " "))
	}
	model := ""
	if len(args) == 1 {
		model = args[0]
	}
	given := givenFlags(c, args)
	return &job.TuneConfig{
		Model: model, Data: c.StringSlice(dataFlag.Name), Val: c.StringSlice("val"), ModelConfig: modelConfigFromFlags(c),
		Criterion: c.String(criterionFlag.Name), Method: methodConfigFromFlags(c),
		Optimizer: c.String("optimizer"), LR: c.Float64("lr"), Momentum: c.Float64("momentum"),
		LRSchedule: c.String("lr-schedule"), Steps: c.Int("steps"), Epochs: c.Int("epochs"),
		Batch: c.Int("batch"), Accumulate: c.Int("accumulate"), ValEvery: c.Int("val-every"), Seed: c.Int64(seedFlag.Name),
		Out: c.Path("out"), Force: c.Bool("force"), Log: c.Path(logFlag.Name), CSV: c.Path("csv"), Plot: c.Path("plot"),
		CheckpointEvery: c.Int("checkpoint-every"), Checkpoint: c.Path("checkpoint"), KeepCheckpoint: c.Bool("keep-checkpoint"),
		Resume: resume, Given: given, ConfigFile: c.Path(configFlag.Name),
	}, nil
}

func tuneSummary(w io.Writer, r *tuneOutcome, limit string) error {
	w = termsafe.NewWriter(w) // names from the model, data and jobs files
	fmt.Fprintf(w, "%s toward %s: %s\n", r.Method, r.Criterion, stoppedText(r.Status, r.Steps, limit))
	fmt.Fprintf(w, "  on the %s data (%d examples):\n", r.MeasuredOn, r.Examples)
	fmt.Fprintf(w, "    %-12s %12s %12s\n", "", "before", "after")
	for i, n := range r.Tasks {
		fmt.Fprintf(w, "    %-12s %#12.4g %#12.4g\n", n, r.BeforeLosses[i], r.AfterLosses[i])
	}
	for _, n := range r.Terms {
		fmt.Fprintf(w, "    %-12s %#12.4g %#12.4g\n", n+" (term)", float64(r.Before.Terms[n]), float64(r.After.Terms[n]))
	}
	if r.Before.Drift != nil && r.After.Drift != nil {
		fmt.Fprintf(w, "    %-12s %#12.4g %#12.4g\n", "drift", float64(*r.Before.Drift), float64(*r.After.Drift))
	}
	fmt.Fprintf(w, "    %-12s %#12.4g %#12.4g\n", "F", float64(r.Before.F), float64(r.After.F))
	fmt.Fprintf(w, "    %-12s %#12.4g %#12.4g\n", "g(θ)", float64(r.Before.G), float64(r.After.G))
	if len(r.After.Metrics) > 0 {
		fmt.Fprintln(w, "  before:")
		job.WriteMetrics(w, "    ", r.Tasks, r.Before.Metrics)
		fmt.Fprintln(w, "  after:")
		job.WriteMetrics(w, "    ", r.Tasks, r.After.Metrics)
	}
	if ex := r.Explanation; ex != nil {
		for _, l := range ex.Lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
		for i, l := range ex.Try {
			if i == 0 {
				fmt.Fprintln(w, "  to try:")
			}
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	if r.Kept != "" {
		fmt.Fprintf(w, "kept the model in %s (%s could not be written)\n", r.Kept, r.Output)
	} else {
		fmt.Fprintf(w, "wrote %s\n", r.Output)
	}
	for _, f := range []struct{ what, path string }{{"log", r.Log}, {"trace", r.CSV}, {"plot", r.Plot}} {
		if f.path != "" {
			fmt.Fprintf(w, "  %s %s\n", f.what, f.path)
		}
	}
	switch {
	case r.Checkpoint != "":
		fmt.Fprintf(w, "  checkpoint %s kept\n", r.Checkpoint)
	case r.CheckpointRemoved != "":
		fmt.Fprintf(w, "  checkpoint %s removed (the model is written; --keep-checkpoint keeps it)\n", r.CheckpointRemoved)
	}
	return nil
}
