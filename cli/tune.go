package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// Defaults of tune: the paper's step size with Adam, its γ for real
// models, and small batches.
const (
	tuneLR        = 1e-3
	tuneBatch     = 32
	tuneOptimizer = "adam"
	// tuneReportMax caps the training examples used for the before/after
	// report when no --val is given.
	tuneReportMax = 2048
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
metadata; the input model is never overwritten, an existing output only with
--force. SIGINT or SIGTERM stops the run, writes a checkpoint (--checkpoint,
default OUT.ckpt) and leaves --out untouched; --resume continues it.`,
	Flags: []ucli.Flag{
		dataFlag,
		&ucli.StringSliceFlag{Name: "val", Usage: "validation data (the arrays of --data) from `SOURCE`: FILE.npz, " + sourceUsage,
			Category: "Data", TakesFile: true},
		taskFlag, mapFlag, bnFlag, freezeFlag,
		criterionFlag, methodFlag, weightsFlag, alphaFlag, gammaFlag(png.DefaultGamma),
		&ucli.StringFlag{Name: "optimizer", Value: tuneOptimizer, Usage: "the optimizer by `NAME`: sgd or adam (the direction v is its gradient)", Category: "Training"},
		lrFlag(tuneLR),
		&ucli.Float64Flag{Name: "momentum", Usage: "SGD momentum μ", Category: "Training"},
		lrScheduleFlag,
		&ucli.IntFlag{Name: "steps", Usage: "number of steps; 0 runs --epochs passes over --data instead", DefaultText: fmt.Sprintf("%d, or --epochs passes when that is set", finetune.DefaultSteps), Category: "Training"},
		epochsFlag,
		batchFlag(tuneBatch),
		&ucli.IntFlag{Name: "val-every", Usage: "evaluate --val every `K` steps (0: at the end only)", Category: "Training"},
		seedFlag,
		&ucli.PathFlag{Name: "out", Usage: "write the tuned model to `OUT.onnx` (default MODEL_tuned.onnx)", Category: "Output"},
		&ucli.BoolFlag{Name: "force", Usage: "overwrite --out if it exists (never the input model)", Category: "Output"},
		logFlag,
		csvFlag,
		&ucli.PathFlag{Name: "plot", Usage: "draw the run to `FILE.png`: F over the steps (with a moving average, and validation F with --val), g and e with the Pareto band, the task losses over the steps, and for 2 or 3 tasks the trajectory in loss space (one panel per pair of tasks)", Category: "Output"},
		checkpointEveryFlag,
		&ucli.PathFlag{Name: "checkpoint", Usage: "write checkpoints to `FILE` (default OUT.ckpt), also on interruption", Category: "Output"},
		&ucli.PathFlag{Name: "resume", Usage: "continue the run saved in `CKPT` (same model, data and settings)", Category: "Training"},
		jsonFlag,
	},
	Action: runTune,
}))

func init() { register(tuneCommand) }

// tuneTestRecorder, when set (by tests), is added to tune's recorders.
var tuneTestRecorder finetune.Recorder

// tuneJob is everything a tuning run needs, resolved from the flags (or
// built by demo).
type tuneJob struct {
	ModelPath  string
	Model      *importer.Model
	Net        *backend.Model
	Tasks      []backend.Task
	Train, Val *finetune.Dataset
	Report     *finetune.Dataset // before/after losses are measured here
	ReportName string            // "validation" or "training"
	Settings   *finetune.Settings
	Criterion  string // as given
	Method     string
	Batch      int
	Out        string
	Force      bool
	LogPath    string
	CSVPath    string
	PlotPath   string
	PlotTitle  string
	Resume     string
	Progress   io.Writer // nil: no progress lines
	Extra      []finetune.Recorder
}

// tuneReport is the measurement of one model on the report set.
type tuneReport struct {
	Losses map[string]jnum `json:"losses"`
	F      jnum            `json:"F"`
	G      jnum            `json:"g"`
}

// tuneOutcome is what tune prints with --json.
type tuneOutcome struct {
	Status     string     `json:"status"`
	Steps      int        `json:"steps"`
	Criterion  string     `json:"criterion"`
	Method     string     `json:"method"`
	Tasks      []string   `json:"tasks"`
	MeasuredOn string     `json:"measured_on"`
	Examples   int        `json:"examples"`
	Before     tuneReport `json:"before"`
	After      tuneReport `json:"after"`
	// InBand is the fraction of the last (up to) 100 steps with g ≤ e,
	// the control off (PNG only).
	InBand     jnum   `json:"in_band_last100"`
	BandSteps  int    `json:"band_steps"`
	Output     string `json:"output"`
	Checkpoint string `json:"checkpoint,omitempty"`
	Log        string `json:"log,omitempty"`
	Plot       string `json:"plot,omitempty"`

	series *series
	before []float64
	after  []float64
}

func runTune(c *ucli.Context) error {
	job, err := tuneJobFromFlags(c)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(c)
	defer stop()
	res, err := job.run(ctx)
	if err != nil {
		var ie *finetune.InterruptedError
		if errors.As(err, &ie) && ie.Checkpoint != "" {
			fmt.Fprintf(c.App.ErrWriter, "interrupted after step %d; %s untouched; continue with --resume %s\n", ie.Step, job.Out, ie.Checkpoint)
		}
		return err
	}
	if c.Bool(jsonFlag.Name) {
		return writeJSON(c.App.Writer, res)
	}
	return tuneSummary(c.App.Writer, res)
}

// tuneJobFromFlags resolves tune's flags and checks model, data and
// destinations before any training.
func tuneJobFromFlags(c *ucli.Context) (*tuneJob, error) {
	args := positional(c)
	if len(args) != 1 {
		return nil, fmt.Errorf("tune: want one MODEL.onnx argument, got %d (%s)", len(args), strings.Join(args, " "))
	}
	job := &tuneJob{ModelPath: args[0], Method: c.String(methodFlag.Name), Batch: c.Int("batch"),
		Force: c.Bool("force"), LogPath: c.Path(logFlag.Name), CSVPath: c.Path("csv"),
		PlotPath: c.Path("plot"), Resume: c.Path("resume"), Progress: c.App.ErrWriter}
	if tuneTestRecorder != nil {
		job.Extra = append(job.Extra, tuneTestRecorder)
	}
	sources, err := dataSources(c, dataFlag.Name, "the training data")
	if err != nil {
		return nil, err
	}
	dataPath := strings.Join(sources, ",")
	if job.Batch < 1 {
		return nil, fmt.Errorf("--batch %d: want at least 1", job.Batch)
	}
	for _, f := range []string{"steps", "epochs", "val-every", "checkpoint-every"} {
		if c.Int(f) < 0 {
			return nil, fmt.Errorf("--%s %d: want ≥ 0", f, c.Int(f))
		}
	}
	job.Out = c.Path("out")
	if job.Out == "" {
		job.Out = strings.TrimSuffix(job.ModelPath, filepath.Ext(job.ModelPath)) + "_tuned.onnx"
	}
	if err := checkOutput(job.ModelPath, job.Out, job.Force); err != nil {
		return nil, err
	}
	ckpt := c.Path("checkpoint")
	if ckpt == "" {
		ckpt = job.Out + ".ckpt"
	}
	if same, _ := samePath(ckpt, job.ModelPath); same {
		return nil, fmt.Errorf("--checkpoint %s: that is the input model", ckpt)
	}
	if job.Resume != "" {
		if _, err := os.Stat(job.Resume); err != nil {
			return nil, fmt.Errorf("--resume: %w", err)
		}
	}

	if job.Tasks, err = parseTasks(c); err != nil {
		return nil, err
	}
	maps, err := parseMaps(c)
	if err != nil {
		return nil, err
	}
	opt, err := modelOptions(c)
	if err != nil {
		return nil, err
	}
	if job.Model, job.Net, err = openModel(job.ModelPath, job.Tasks, opt); err != nil {
		return nil, err
	}
	if job.Net.NumParams() == 0 {
		return nil, fmt.Errorf("%s: nothing to train (no trainable initializer; check --freeze)", job.ModelPath)
	}
	names := job.Net.Tasks()
	s := &finetune.Settings{
		Optimizer: c.String("optimizer"), LR: c.Float64("lr"), Momentum: c.Float64("momentum"),
		LRSchedule: c.String("lr-schedule"), Steps: c.Int("steps"), Epochs: c.Int("epochs"),
		BatchSize: job.Batch, Seed: c.Int64(seedFlag.Name), ValEvery: c.Int("val-every"),
		CheckpointEvery: c.Int("checkpoint-every"), CheckpointPath: ckpt,
		Meta: map[string]any{"command": "tune", "model": job.ModelPath, "data": dataPath, "out": job.Out},
	}
	if s.Method, err = methodFromFlags(c, names); err != nil {
		return nil, err
	}
	job.Criterion = c.String(criterionFlag.Name)
	if job.Criterion == "" {
		return nil, fmt.Errorf("--criterion: required: an expression over the task names (%s) or a preset such as wd:r1,...", strings.Join(names, ", "))
	}
	if s.Criterion, err = criterion.Parse(job.Criterion, names); err != nil {
		return nil, fmt.Errorf("--criterion: %w", err)
	}
	s.Meta["criterion"] = job.Criterion
	job.Settings = s

	bind := dataBinding{md: job.Net, tasks: job.Tasks, maps: maps}
	if err := bind.check(); err != nil {
		return nil, err
	}
	if job.Train, err = bind.load("--data", sources, 0, job.Batch); err != nil {
		return nil, err
	}
	if vs := c.StringSlice("val"); len(vs) > 0 {
		if job.Val, err = bind.load("--val", vs, 0, job.Batch); err != nil {
			return nil, err
		}
		job.Report, job.ReportName = job.Val, "validation"
	} else {
		job.Report, job.ReportName = job.Train, "training"
		if job.Train.Len() > tuneReportMax {
			job.Report = &finetune.Dataset{Arrays: job.Train.Slice(0, tuneReportMax)}
		}
	}
	job.PlotTitle = fmt.Sprintf("%s: %s, %s", filepath.Base(job.ModelPath), job.Method, job.Criterion)
	return job, nil
}

// checkOutput refuses to write out over the input model, and over an
// existing file without force.
func checkOutput(in, out string, force bool) error {
	if same, err := samePath(in, out); err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	} else if same {
		return fmt.Errorf("--out %s: that is the input model; paretonav never overwrites its input (choose another --out)", out)
	}
	if _, err := os.Stat(out); err == nil && !force {
		return fmt.Errorf("--out %s: file exists (use --force to overwrite)", out)
	}
	return nil
}

// samePath reports whether a and b name the same file (the same absolute
// path, or the same existing file through links).
func samePath(a, b string) (bool, error) {
	aa, err := filepath.Abs(a)
	if err != nil {
		return false, err
	}
	bb, err := filepath.Abs(b)
	if err != nil {
		return false, err
	}
	if aa == bb {
		return true, nil
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb), nil
}

// measure evaluates the criterion on the report set.
func (j *tuneJob) measure() (tuneReport, []float64, error) {
	r, err := evaluateData(j.Net, j.Report, j.Batch, true)
	if err != nil {
		return tuneReport{}, nil, fmt.Errorf("%s data: %w", j.ReportName, err)
	}
	// A criterion outside its domain is reported as NaN (null in JSON);
	// the training loop decides what that means for the run.
	F, err := j.Settings.Criterion.Eval(r.Losses, make([]float64, len(r.Losses)))
	if err != nil {
		F = math.NaN()
	}
	out := tuneReport{Losses: map[string]jnum{}, F: jnum(F), G: jnum(r.G)}
	for i, n := range j.Net.Tasks() {
		out.Losses[n] = jnum(r.Losses[i])
	}
	return out, r.Losses, nil
}

// run measures the model, trains it, measures it again and saves it. On
// any error (interruption, non-finite values) nothing is written to Out.
func (j *tuneJob) run(ctx context.Context) (res *tuneOutcome, err error) {
	res = &tuneOutcome{Criterion: j.Criterion, Method: j.Method, Tasks: j.Net.Tasks(), MeasuredOn: j.ReportName,
		Examples: j.Report.Len(), Output: j.Out, Log: j.LogPath, Plot: j.PlotPath, series: &series{}}
	if res.Before, res.before, err = j.measure(); err != nil {
		return nil, fmt.Errorf("before training: %w", err)
	}
	recs := []finetune.Recorder{res.series}
	if j.Progress != nil {
		recs = append(recs, finetune.NewProgress(j.Progress))
	}
	traced, closeFiles, err := traceRecorders("--"+csvFlag.Name, j.CSVPath, j.LogPath)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, closeFiles()) }()
	recs = append(recs, traced...)
	recs = append(recs, j.Extra...)
	var fr *finetune.Result
	if j.Resume != "" {
		fr, err = finetune.Resume(ctx, j.Resume, j.Net, j.Train, j.Val, j.Settings, finetune.Multi(recs...))
	} else {
		fr, err = finetune.Run(ctx, j.Net, j.Train, j.Val, j.Settings, finetune.Multi(recs...))
	}
	if err != nil {
		if errors.Is(err, finetune.ErrNonFinite) {
			return nil, fmt.Errorf("tune: %w; no model written", err)
		}
		return nil, err
	}
	res.Status, res.Steps, res.Checkpoint = fr.Status.String(), fr.Steps, fr.Checkpoint
	if err := j.Net.SetParams(fr.Points[0].Params); err != nil {
		return nil, err
	}
	if res.After, res.after, err = j.measure(); err != nil {
		return nil, fmt.Errorf("after training: %w", err)
	}
	res.InBand, res.BandSteps = res.series.inBand(100)
	if j.PlotPath != "" {
		if err := plotTune(j.PlotPath, &tunePlot{Title: j.PlotTitle, Tasks: res.Tasks, Series: res.series, Crit: j.Settings.Criterion,
			Before: res.before, After: res.after, MeasuredOn: j.ReportName, Examples: res.Examples}); err != nil {
			return nil, err
		}
	}
	meta, err := json.Marshal(map[string]any{
		"version": Version, "criterion": j.Criterion, "method": j.Method, "steps": fr.Steps,
		"tasks": taskSpecs(j.Tasks), "source": filepath.Base(j.ModelPath),
		"optimizer": j.Settings.Optimizer, "lr": j.Settings.LR,
	})
	if err != nil {
		return nil, err
	}
	if err := importer.Save(j.Out, j.Model, j.Net.Weights(), importer.SaveOptions{
		Producer: map[string]string{"paretonav": string(meta)}, Force: j.Force,
	}); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	return res, nil
}

func taskSpecs(ts []backend.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return out
}

func tuneSummary(w io.Writer, r *tuneOutcome) error {
	fmt.Fprintf(w, "%s toward %s: %s after %d steps\n", r.Method, r.Criterion, r.Status, r.Steps)
	fmt.Fprintf(w, "  on the %s data (%d examples):\n", r.MeasuredOn, r.Examples)
	fmt.Fprintf(w, "    %-12s %12s %12s\n", "", "before", "after")
	for i, n := range r.Tasks {
		fmt.Fprintf(w, "    %-12s %#12.4g %#12.4g\n", n, r.before[i], r.after[i])
	}
	fmt.Fprintf(w, "    %-12s %#12.4g %#12.4g\n", "F", float64(r.Before.F), float64(r.After.F))
	fmt.Fprintf(w, "    %-12s %#12.4g %#12.4g\n", "g(θ)", float64(r.Before.G), float64(r.After.G))
	if r.Method == "png" && r.BandSteps > 0 {
		fmt.Fprintf(w, "  in the Pareto band (g ≤ e) for %.0f%% of the last %d steps\n", 100*float64(r.InBand), r.BandSteps)
	}
	fmt.Fprintf(w, "wrote %s\n", r.Output)
	return nil
}
