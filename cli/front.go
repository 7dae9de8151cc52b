package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/finetune/front"
	"github.com/paretonav/paretonav/internal/termsafe"
	"github.com/paretonav/paretonav/job"
	"github.com/paretonav/paretonav/models/synthetic"
	"github.com/paretonav/paretonav/png"
)

var frontCommand = withInterspersed(withConfig(&ucli.Command{
	Name:      "front",
	Usage:     "train N models together toward diverse Pareto models (multi-point PNG with the energy criterion)",
	ArgsUsage: "MODEL.onnx | --problem exp2",
	Description: `Trains --models N copies of one ONNX model (each perturbed by seeded Gaussian
noise of size --spread) or N given models (--init a.onnx,b.onnx,...) with
multi-point PNG: every model keeps its task losses Pareto-stationary while the
energy Σ_{i≠j} ‖L_i − L_j‖⁻² over their loss vectors spreads them along the
front. Writes OUT_DIR/model_K.onnx (atomically), front.csv (each model's task
losses and, for nll/ce tasks, accuracies on --val, else on the first 2048
examples of --data), front.png (the models in loss space), report.json
(how many models are non-dominated; the hypervolume of the losses below the
reference point --ref, with a note when no model is below it in every task,
and of the accuracies above 0; IGD+ of the losses against a reference front,
--reference FILE.csv or with --problem the true front).

With --problem exp2 (or zdt2v) the same code path trains the paper's
synthetic problem (no data, no ONNX files) and also reports every model's
distance to the true front and the spacing of the models along it.

Every file the run writes is checked before the first step, as with tune:
distinct, never an input, in a folder that takes files, replaced only with
--force. SIGINT or SIGTERM writes a checkpoint (default OUT_DIR/front.ckpt)
holding the whole configuration: "paretonav front --resume CKPT" alone
continues the run. The checkpoint is removed once the models are written
unless --keep-checkpoint.`,
	Flags: []ucli.Flag{verboseFlag,
		&ucli.StringFlag{Name: "problem", Usage: "train the synthetic problem `NAME` (" + strings.Join(synthetic.Names, " or ") + ") instead of an ONNX model", Category: "Problem"},
		dataFlag,
		&ucli.StringSliceFlag{Name: "val", Usage: "data the models are scored on (default: --data), from `SOURCE`: FILE.npz, " + sourceUsage,
			Category: "Data", TakesFile: true},
		taskFlag, termFlag, mapFlag, bnFlag, freezeFlag, untieFlag, maxMemoryFlag,
		&ucli.IntFlag{Name: "models", Value: job.FrontModels, Usage: "number `N` of models trained together", Category: "Problem"},
		&ucli.StringFlag{Name: "init", Usage: "start model k from the k-th file of `A.onnx,B.onnx,...` (one per model) instead of from perturbed copies of MODEL", Category: "Problem"},
		&ucli.Float64Flag{Name: "spread", Usage: "standard deviation `S` of the seeded noise added to every parameter of every copy",
			DefaultText: fmt.Sprintf("%g; %g with --problem", job.FrontSpread, job.SynthSpread), Category: "Problem"},
		&ucli.StringFlag{Name: "criterion", Value: "energy", Usage: "the multi-point criterion that spreads the models; `SPEC` is energy or energy:eps=E, optionally + a per-model expression over the tasks, the --term names and drift (energy + 0.01*drift)", Category: "Method"},
		&ucli.StringFlag{Name: "energy-scale", Value: finetune.MultiPerModel, Usage: "how the energy's gradients ∂E/∂L_k reach the models, `SCALE`: model (each to unit length), shared (all divided by the largest length: a model far from the others is pushed less) or raw", Category: "Method"},
		&ucli.StringFlag{Name: "energy-push", Usage: "what the energy asks of each model, `PUSH`: trade (only to lower some losses and raise others; descent is PNG's control) or full (the paper's: away from every other model in loss space, which holds back a model that another beats on every task)",
			DefaultText: "trade; full with --problem", Category: "Method"},
		&ucli.StringFlag{Name: "method", Value: "png", Usage: "the `METHOD`: png (multi-point PNG with --criterion) or epo (EPO: model k seeks its own preference ray, --preference)", Category: "Method"},
		&ucli.StringFlag{Name: "preference", Usage: "with --method epo: one preference per model as `R1,R2;R1,R2;...` (model k seeks R1·ℓ1 = R2·ℓ2 = …)",
			DefaultText: "for 2 tasks (w, 1−w) with w = (k+½)/N", Category: "Method"},
		alphaFlag,
		&ucli.Float64Flag{Name: "gamma", Usage: "PNG's `γ`: the control is on while g > γ·ē", DefaultText: fmt.Sprintf("%g; %g with --problem", png.DefaultGamma, job.SynthGamma), Category: "Method"},
		&ucli.StringFlag{Name: "optimizer", Usage: "the optimizer by `NAME`: sgd or adam", DefaultText: "adam; sgd with --problem", Category: "Training"},
		&ucli.Float64Flag{Name: "lr", Usage: "learning rate `ξ`", DefaultText: fmt.Sprintf("%g with adam, %g with sgd; %g with --problem", job.TuneLR, job.TuneSGDLR, job.SynthLR), Category: "Training"},
		&ucli.Float64Flag{Name: "momentum", Usage: "SGD momentum `μ` (with --optimizer sgd)", DefaultText: fmt.Sprintf("%g; 0 with --problem", job.TuneSGDMomentum), Category: "Training"},
		lrScheduleFlag,
		&ucli.IntFlag{Name: "steps", Usage: "number of steps `N`; 0 runs --epochs passes over --data instead",
			DefaultText: fmt.Sprintf("%d; %d with --problem; --epochs passes when that is set", job.FrontSteps, job.SynthSteps), Category: "Training"},
		epochsFlag,
		batchFlag(job.FrontBatch),
		&ucli.IntFlag{Name: "workers", Value: 1, Usage: "evaluate `W` models at once", Category: "Training"},
		seedFlag,
		&ucli.PathFlag{Name: "out-dir", Usage: "write the models, front.csv, front.png and report.json to `DIR`", Category: "Output"},
		&ucli.StringFlag{Name: "ref", Usage: "hypervolume reference point on the losses, one value for all tasks or one per task as `R1,R2,...`; only models below it in every task count",
			DefaultText: fmt.Sprintf("%g, the paper's for trained MultiMNIST models; %g with --problem", front.DefaultLossRef, job.SynthRef), Category: "Output"},
		&ucli.PathFlag{Name: "reference", Usage: "measure IGD+ of the models' losses against the reference front in `FILE.csv` (one point per row, a loss per task; a header names the columns loss_TASK as in front.csv, or the tasks in order)",
			Category: "Output", TakesFile: true},
		&ucli.BoolFlag{Name: "force", Usage: "replace existing files in --out-dir, --log, --csv and another run's checkpoint; never an input", Category: "Output"},
		logFlag,
		csvFlag,
		checkpointEveryFlag,
		&ucli.PathFlag{Name: "checkpoint", Usage: "write checkpoints to `FILE` (default OUT_DIR/front.ckpt), also on interruption", Category: "Output"},
		&ucli.BoolFlag{Name: "keep-checkpoint", Usage: "keep the checkpoint after the models are written (it is removed by default)", Category: "Output"},
		&ucli.PathFlag{Name: "resume", Usage: "continue the run saved in `CKPT`: the checkpoint holds its models, data and settings; flags given again must agree", Category: "Training"},
		jsonFlag,
	},
	Action: runFront,
}))

func init() { register(frontCommand) }

// frontTestRecorder, when set (by tests), is added to front's recorders.
var frontTestRecorder finetune.Recorder

func runFront(c *ucli.Context) error {
	fj, err := frontConfigFromFlags(c).Prepare(nil)
	if err != nil {
		return err
	}
	fj.Progress, fj.Plot = c.App.ErrWriter, plotFront
	printWarnings(c, fj.Warnings)
	if fj.Memory != nil && verbose(c) && !c.Bool(jsonFlag.Name) {
		fmt.Fprintln(c.App.ErrWriter, fj.Memory)
	}
	ctx, stop := signalContext(c)
	defer stop()
	var extra []finetune.Recorder
	if frontTestRecorder != nil {
		extra = append(extra, frontTestRecorder)
	}
	out, err := fj.Run(ctx, extra...)
	if err != nil {
		var ie *finetune.InterruptedError
		if errors.As(err, &ie) && ie.Checkpoint != "" {
			fmt.Fprintf(c.App.ErrWriter, "interrupted after step %d; continue with `paretonav front --resume %s`\n", ie.Step, job.ShellQuote(ie.Checkpoint))
		}
		if ie != nil {
			return interruptedError(ctx, "front", ie)
		}
		return err
	}
	if c.Bool(jsonFlag.Name) {
		return writeJSON(c.App.Writer, out)
	}
	return frontSummary(c.App.Writer, out, stepLimit(c))
}

// givenFlags names the flags of c's command that the command line or
// --config set, and "MODEL" when args holds the model.
func givenFlags(c *ucli.Context, args []string) map[string]bool {
	given := map[string]bool{}
	if len(args) > 0 {
		given["MODEL"] = true
	}
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			if c.IsSet(n) {
				given[n] = true
			}
		}
	}
	return given
}

// frontConfigFromFlags reads front's flags into a job configuration.
func frontConfigFromFlags(c *ucli.Context) *job.FrontConfig {
	return &job.FrontConfig{
		Problem: c.String("problem"), Args: positional(c), Data: c.StringSlice(dataFlag.Name), Val: c.StringSlice("val"),
		ModelConfig: modelConfigFromFlags(c), Models: c.Int("models"), Init: c.String("init"),
		Spread: optFloat(c, "spread"), Criterion: c.String("criterion"), Method: c.String("method"),
		Preference: c.String("preference"), EnergyScale: c.String("energy-scale"), EnergyPush: c.String("energy-push"), Alpha: c.Float64(alphaFlag.Name),
		Gamma: optFloat(c, "gamma"), Optimizer: c.String("optimizer"), LR: optFloat(c, "lr"), Momentum: optFloat(c, "momentum"),
		LRSchedule: c.String("lr-schedule"), Steps: c.Int("steps"), Epochs: c.Int("epochs"), Batch: c.Int("batch"),
		Workers: c.Int("workers"), Seed: c.Int64(seedFlag.Name), OutDir: c.Path("out-dir"), Ref: c.String("ref"),
		Reference: c.Path("reference"), Force: c.Bool("force"), Log: c.Path(logFlag.Name), CSV: c.Path(csvFlag.Name),
		CheckpointEvery: c.Int("checkpoint-every"), Checkpoint: c.Path("checkpoint"), Resume: c.Path("resume"),
		KeepCheckpoint: c.Bool("keep-checkpoint"), Given: givenFlags(c, positional(c)), ConfigFile: c.Path(configFlag.Name),
	}
}

// optFloat returns the value of the float flag name when it was given,
// else nil (the job's default).
func optFloat(c *ucli.Context, name string) *float64 {
	if !c.IsSet(name) {
		return nil
	}
	v := c.Float64(name)
	return &v
}

func frontSummary(w io.Writer, r *job.FrontOutcome, limit string) error {
	w = termsafe.NewWriter(w) // names from the model, data and jobs files
	fmt.Fprintf(w, "%s: %d models, criterion %s: %s\n", r.Source, len(r.Models), r.Criterion, stoppedText(r.Status, r.Steps, limit))
	fmt.Fprintf(w, "  scored on %s\n", r.ScoredOn)
	for _, m := range r.Models {
		var parts []string
		for _, t := range r.Tasks {
			p := fmt.Sprintf("%s=%#.4g", t, float64(m.Losses[t]))
			if a, ok := m.Accuracy[t]; ok && !math.IsNaN(float64(a)) {
				p += fmt.Sprintf(" (acc %#.4g)", float64(a))
			}
			parts = append(parts, p)
		}
		extra := ""
		if m.FrontDist != nil {
			extra = fmt.Sprintf("  front distance %#.4g", float64(*m.FrontDist))
		}
		fmt.Fprintf(w, "  model %d: %s  g %#.4g%s\n", m.Model, strings.Join(parts, " "), float64(m.G), extra)
		if m.Explanation != nil && m.Explanation.Short != "" {
			fmt.Fprintf(w, "    %s\n", m.Explanation.Short)
		}
		if job.BeyondAccuracy(m.Metrics) {
			job.WriteMetrics(w, "    ", r.Tasks, m.Metrics)
		}
	}
	fmt.Fprintf(w, "  losses: %d of %d models non-dominated; ", r.Loss.NonDominated, len(r.Models))
	if r.Loss.HVNote != "" {
		fmt.Fprintf(w, "%s\n", r.Loss.HVNote)
	} else {
		fmt.Fprintf(w, "HV %#.4g (ref %s)\n", float64(r.Loss.HV), job.JoinFloats(r.Loss.Ref))
	}
	if r.Loss.IGDPlus != nil {
		fmt.Fprintf(w, "  losses: IGD+ %#.4g against %s\n", float64(*r.Loss.IGDPlus), r.Loss.Reference)
	}
	if r.Accuracy != nil {
		fmt.Fprintf(w, "  accuracies: %d of %d models non-dominated; HV %#.4g (ref 0)\n", r.Accuracy.NonDominated, len(r.Models), float64(r.Accuracy.HV))
	}
	if len(r.Gaps) > 0 {
		lo, hi := math.Inf(1), 0.0
		for _, g := range r.Gaps {
			lo, hi = math.Min(lo, float64(g)), math.Max(hi, float64(g))
		}
		fmt.Fprintf(w, "  neighbour gaps in loss space: %#.4g .. %#.4g (ratio %#.3g)\n", lo, hi, hi/lo)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	fmt.Fprintf(w, "wrote %s\n", filepath.Dir(r.Files["report"]))
	switch {
	case r.Checkpoint != "":
		fmt.Fprintf(w, "  checkpoint %s kept\n", r.Checkpoint)
	case r.CheckpointRemoved != "":
		fmt.Fprintf(w, "  checkpoint %s removed (the models are written; --keep-checkpoint keeps it)\n", r.CheckpointRemoved)
	}
	return nil
}
