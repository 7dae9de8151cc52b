package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/atomicfile"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// Defaults of tune: the paper's step size with Adam, its γ for real
// models, and small batches.
const (
	TuneLR = finetune.DefaultLR
	// TuneSGDLR and TuneSGDMomentum are front's SGD learning rate and
	// momentum when none are given (README, "front"); front hands every
	// model the energy's gradient scaled to unit length, so one rate fits.
	// Adam's 1e-3 is a step of about 1e-3 per parameter whatever the
	// gradient's size; SGD's step is lr·v, and an untrained network's task
	// gradients are small (LeNet2 on MultiMNIST: ‖∇ℓ_i‖² ≈ 0.01). Measured
	// with front, 5 models, 300 steps of 256 from scratch: plain SGD at
	// 1e-3 or 1e-2 stays at chance (losses 2.24–2.30); plain SGD at 0.1
	// leaves the plateau but overshoots (a batch loss jumped 1.2 → 3.8) and
	// one model ends at (0.82, 1.81); momentum 0.9 at 0.01 ends with one
	// model above 0.6; momentum 0.9 at 0.03 trains all five below 0.6 but
	// they are still descending at step 300 (seed 1: losses 0.10–0.23, 3
	// of 5 non-dominated); at 0.06 (with the trade test,
	// png.RobustMaxTradeoff) seed 1 ends at 0.02–0.19 with 4 of 5
	// non-dominated and seed 2 at 0.02–0.24 with 2 of 5.
	TuneSGDLR       = 0.06
	TuneSGDMomentum = 0.9
	TuneBatch       = finetune.DefaultBatchSize
	TuneOptimizer   = "adam"
	// tuneReportMax caps the training examples used for the before/after
	// report when no validation data are given.
	tuneReportMax = 2048
)

// DefaultMomentum returns the SGD momentum front uses for an ONNX model
// when none is given: TuneSGDMomentum for "sgd", else 0.
func DefaultMomentum(optimizer string) float64 {
	if optimizer == "sgd" {
		return TuneSGDMomentum
	}
	return 0
}

// DefaultLR returns the learning rate front uses for an ONNX model when
// none is given: TuneSGDLR for "sgd", else TuneLR (Adam's).
func DefaultLR(optimizer string) float64 {
	if optimizer == "sgd" {
		return TuneSGDLR
	}
	return TuneLR
}

// TuneConfig is a tune job as the tune command's flags give it. The flag
// tags name each field's flag: a resumed run (Resume) takes every tagged
// field from its checkpoint and refuses a given one that differs (Given),
// except those marked free.
type TuneConfig struct {
	Model string   `flag:"MODEL,path"` // MODEL.onnx
	Data  []string `flag:"data,sources"`
	Val   []string `flag:"val,sources"`
	ModelConfig
	Criterion string       `flag:"criterion"`
	Method    MethodConfig // its fields carry their flags
	Optimizer string       `flag:"optimizer"`
	LR        float64      `flag:"lr"` // 0: TuneLR
	Momentum  float64      `flag:"momentum"`
	// LRSchedule is constant, cosine or step.
	LRSchedule string `flag:"lr-schedule"`
	// Steps, or Epochs passes over Data when Steps is 0.
	Steps  int `flag:"steps"`
	Epochs int `flag:"epochs"`
	Batch  int `flag:"batch"`
	// Accumulate splits every batch into this many micro-batches run one
	// after the other (finetune.Accumulate): the step of --batch B at the
	// memory of B/Accumulate. 0 or 1: whole batches.
	Accumulate int   `flag:"accumulate"`
	ValEvery   int   `flag:"val-every"`
	Seed       int64 `flag:"seed"`
	// Out is the tuned model (default MODEL_tuned.onnx); Force replaces
	// existing files (never an input; a resumed run has Force only when
	// its own command line gives it).
	Out   string `flag:"out,path,dest"`
	Force bool
	// Log (JSON lines), CSV (per-step trace) and Plot (drawn by the
	// caller, Tune.Plot) are written when set.
	Log  string `flag:"log,path,dest"`
	CSV  string `flag:"csv,path,dest"`
	Plot string `flag:"plot,path,dest"`
	// CheckpointEvery steps a checkpoint is written to Checkpoint
	// (default OUT.ckpt), also on interruption. After the model is written
	// the checkpoint is removed unless KeepCheckpoint.
	CheckpointEvery int    `flag:"checkpoint-every"`
	Checkpoint      string `flag:"checkpoint,path,dest"`
	KeepCheckpoint  bool   `flag:"keep-checkpoint,free"`
	// Resume continues the run saved in that checkpoint: the checkpoint
	// holds the run's configuration, which the other fields may repeat
	// but not change.
	Resume string
	// Given names the flags the user set ("MODEL" for the model
	// argument); on Resume only those are compared with the checkpoint's
	// configuration, the others are taken from it. nil: every field is
	// given (a batch job's configuration).
	Given map[string]bool `json:"-"`
	// ConfigFile is the --config file the flags were read from, an input
	// no output may overwrite.
	ConfigFile string `json:"-"`
	// MakeFolders: the caller creates the output folders before the run
	// (Destinations.MakeFolders).
	MakeFolders bool `json:"-"`
	// RunID names one run across its resumptions: made when a run starts,
	// kept in its checkpoints and in the model it writes, so that a
	// checkpoint of a run that already wrote its model is refused.
	RunID string `json:"run_id,omitempty"`
}

// Tune is a resolved tuning run: the model and data loaded and checked,
// the settings built. Callers may also build one directly (demo does).
type Tune struct {
	ModelPath  string
	Model      *importer.Model
	Net        *backend.Model
	Tasks      []backend.Task
	Terms      []backend.Task // losses the criterion may read that are not tasks
	Train, Val *finetune.Dataset
	Report     *finetune.Dataset // before/after losses are measured here
	ReportName string            // "validation" or "training"
	Settings   *finetune.Settings
	Criterion  string // as given
	Method     string
	Batch      int
	Accumulate int // micro-batches per batch (1: none)
	Out        string
	Force      bool
	LogPath    string
	CSVPath    string
	PlotPath   string // drawn by Plot
	Resume     string
	RunID      string // recorded in the model (TuneConfig.RunID)
	// Checkpoint is where the run's checkpoints go (Settings.CheckpointPath
	// when set); after the model is written it is removed unless
	// KeepCheckpoint.
	Checkpoint     string
	KeepCheckpoint bool
	resumeStep     int // the step Resume holds (its log and trace are kept up to it)
	// staleCheckpoint: Checkpoint held another run's checkpoint when this
	// one started over it (--force).
	staleCheckpoint bool
	Progress        io.Writer // nil: no progress lines
	// Warnings are found by Prepare (tied parameters, SharedWarning) for
	// the caller to show once.
	Warnings []string
	Memory   *MemoryPlan // the expected peak, checked against the limit
	Extra    []finetune.Recorder
	// Plot, when set, draws the run to PlotPath after the model is
	// written (the command's plot); its error is reported without losing
	// the model.
	Plot func(path string, res *TuneOutcome) error
}

// TuneReport is the measurement of one model on the report set.
type TuneReport struct {
	Losses map[string]Num `json:"losses"`
	Terms  map[string]Num `json:"terms,omitempty"` // the --term values
	Drift  *Num           `json:"drift,omitempty"` // ‖θ − θ₀‖², when the criterion reads drift
	F      Num            `json:"F"`
	G      Num            `json:"g"`
	// Metrics are the tasks' metrics on the same data (front.Meter).
	Metrics map[string]map[string]Num `json:"metrics,omitempty"`
}

// TuneOutcome is what a tune job reports (tune --json, a batch job's
// result).
type TuneOutcome struct {
	Status     string     `json:"status"`
	Steps      int        `json:"steps"`
	Criterion  string     `json:"criterion"`
	Method     string     `json:"method"`
	Tasks      []string   `json:"tasks"`
	Terms      []string   `json:"terms,omitempty"`
	MeasuredOn string     `json:"measured_on"`
	Examples   int        `json:"examples"`
	Before     TuneReport `json:"before"`
	After      TuneReport `json:"after"`
	// InBand is the fraction of the last (up to) 100 steps with g ≤ e,
	// in the Pareto band, whether or not the improper-trade guard kept
	// the control on (PNG only).
	InBand    Num `json:"in_band_last100"`
	BandSteps int `json:"band_steps"`
	// Explanation says what happened and what to try (the summary's
	// words, with their numbers).
	Explanation *Explanation `json:"explanation,omitempty"`
	// Output is the tuned model. When it could not be written there the
	// model is kept at Kept instead (and Run returns the error).
	Output string `json:"output"`
	Kept   string `json:"kept,omitempty"`
	// Checkpoint is the checkpoint left on disk (KeepCheckpoint, or when
	// the model could not be written); "" when none is left.
	Checkpoint string `json:"checkpoint,omitempty"`
	// CheckpointRemoved names the run's checkpoint, removed once the
	// model was written.
	CheckpointRemoved string `json:"checkpoint_removed,omitempty"`
	Log               string `json:"log,omitempty"`
	CSV               string `json:"csv,omitempty"`
	Plot              string `json:"plot,omitempty"`
	// Warnings are what went wrong without costing the model (a
	// checkpoint that could not be written during the run).
	Warnings []string `json:"warnings,omitempty"`

	// BeforeLosses and AfterLosses are the task losses on the report set,
	// in task order.
	BeforeLosses []float64 `json:"-"`
	AfterLosses  []float64 `json:"-"`
}

// Prepare checks c and resolves it into a run: model and data (read
// through l, which may be nil) checked against each other, destinations
// checked, before any training.
func (c *TuneConfig) Prepare(l *Loader) (*Tune, error) {
	resumeStep := -1
	if c.Resume != "" {
		rc, step, err := c.resumed()
		if err != nil {
			return nil, err
		}
		c, resumeStep = rc, step
	} else if c.Model == "" {
		return nil, errors.New("tune: want a MODEL.onnx argument (or --resume CKPT to continue an interrupted run)")
	} else {
		fresh := *c
		fresh.RunID = newRunID()
		c = &fresh
	}
	job := &Tune{ModelPath: c.Model, Method: c.Method.Name, Batch: c.Batch, Force: c.Force, RunID: c.RunID,
		LogPath: c.Log, CSVPath: c.CSV, PlotPath: c.Plot, Resume: c.Resume, resumeStep: resumeStep, KeepCheckpoint: c.KeepCheckpoint}
	if len(c.Data) == 0 {
		return nil, missingData("data", "the training data")
	}
	dataPath := strings.Join(c.Data, ",")
	if job.Batch < 1 {
		return nil, fmt.Errorf("--batch %d: want at least 1", job.Batch)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"steps", c.Steps}, {"epochs", c.Epochs}, {"val-every", c.ValEvery}, {"checkpoint-every", c.CheckpointEvery}, {"accumulate", c.Accumulate}} {
		if f.v < 0 {
			return nil, fmt.Errorf("--%s %d: want ≥ 0", f.name, f.v)
		}
	}
	if job.Accumulate = max(c.Accumulate, 1); job.Accumulate > job.Batch {
		return nil, fmt.Errorf("--accumulate %d: more micro-batches than the %d examples of --batch", job.Accumulate, job.Batch)
	}
	d := c.defaulted()
	job.Out, job.Checkpoint = d.Out, d.Checkpoint
	ckpt := job.Checkpoint
	if job.Resume == "" {
		if err := freshCheckpoint("tune", ckpt, job.Force); err != nil {
			return nil, err
		}
		_, err := os.Stat(ckpt)
		job.staleCheckpoint = err == nil // forced over: removed once this run's model is written
	}
	if err := c.destinations(job).Check(); err != nil {
		return nil, err
	}
	setup, err := c.ModelConfig.setup()
	if err != nil {
		return nil, err
	}
	job.Tasks, job.Terms = setup.tasks, setup.opt.Terms
	if job.Model, job.Net, err = setup.open(l, job.ModelPath); err != nil {
		return nil, err
	}
	// Again with the files the model names: its external data are inputs
	// too, and --out writes a data file beside it.
	if err := c.destinations(job).Check(); err != nil {
		return nil, err
	}
	if job.Net.NumParams() == 0 {
		return nil, fmt.Errorf("%s: nothing to train (no trainable initializer; check --freeze)", job.ModelPath)
	}
	if w := SharedWarning(job.ModelPath, job.Net); w != "" {
		job.Warnings = append(job.Warnings, w)
	}
	for _, w := range []string{RewrittenWarning(job.ModelPath, job.Model), ConstantsWarning(job.ModelPath, job.Model)} {
		if w != "" {
			job.Warnings = append(job.Warnings, w)
		}
	}
	names := job.Net.Tasks()
	// tune keeps TuneLR for both optimizers (TuneSGDLR is front's): its
	// criterion's gradient ∂F/∂ℓ has any scale (13 for wd:0.3,0.3 at
	// chance-level losses), and SGD's step scales with it, so no fixed SGD
	// rate suits every criterion (momentum 0.9 at 0.03 killed an untrained
	// LeNet2 in 12 steps with wd:0.3,0.3); Adam's step does not depend on
	// that scale, which is why it is tune's default.
	if err := CheckPositive("--lr", c.LR, fmt.Sprintf("the learning rate; default %g", TuneLR)); err != nil {
		return nil, err
	}
	if err := CheckMomentum(c.Momentum); err != nil {
		return nil, err
	}
	s := &finetune.Settings{
		Optimizer: c.Optimizer, LR: d.LR, Momentum: c.Momentum,
		LRSchedule: c.LRSchedule, Steps: c.Steps, Epochs: c.Epochs,
		BatchSize: job.Batch, Seed: c.Seed, ValEvery: c.ValEvery,
		CheckpointEvery: c.CheckpointEvery, CheckpointPath: ckpt,
		Meta: map[string]any{"command": "tune", "model": job.ModelPath, "data": dataPath, "out": job.Out},
	}
	if s.Method, err = c.Method.Build(names); err != nil {
		return nil, err
	}
	if p, ok := s.Method.(png.PNG); ok {
		// Real models, possibly untrained: a threshold exploding
		// gradients cannot raise (png.RobustThresholdCap), and no walk
		// off along a task whose loss has reached its floor
		// (png.RobustMaxTradeoff).
		p.Settings.ThresholdCap = png.RobustThresholdCap
		p.Settings.MaxTradeoff = png.RobustMaxTradeoff
		s.Method = p
	}
	job.Criterion = c.Criterion
	if job.Criterion == "" && c.Method.Name == "epo" {
		job.Criterion = c.Method.EPOCriterion(len(names))
	}
	if job.Criterion == "" {
		return nil, fmt.Errorf("--criterion: required: an expression over the task names (%s) or a preset such as wd:r1,...", strings.Join(names, ", "))
	}
	if s.Criterion, err = criterion.Parse(job.Criterion, names, job.Net.Terms()...); err != nil {
		return nil, fmt.Errorf("--criterion: %w", err)
	}
	s.Meta["criterion"] = job.Criterion
	net, tasks := job.Net, job.Tasks
	s.ValMeter = func(int) finetune.Meter { return ModelMeter(net, tasks) }
	job.Settings = s

	bind, err := setup.binding(job.Net, job.ModelPath)
	if err != nil {
		return nil, err
	}
	if job.Train, err = bind.Load(l, "--data", c.Data, 0, job.Batch); err != nil {
		return nil, err
	}
	if len(c.Val) > 0 {
		if job.Val, err = bind.Load(l, "--val", c.Val, 0, job.Batch); err != nil {
			return nil, err
		}
		job.Report, job.ReportName = job.Val, "validation"
	} else {
		job.Report, job.ReportName = job.Train, "training"
		if job.Train.Len() > tuneReportMax {
			job.Report = job.Train.Prefix(tuneReportMax)
		}
	}
	job.Warnings = append(job.Warnings, bind.Warnings...)
	rows := int64(len(job.Tasks)+len(job.Terms)) * 4 * int64(job.Net.NumParams()) // one Jacobian
	vec := 4 * int64(job.Net.NumParams())
	extra := TuneLoopBytes(len(job.Tasks)+len(job.Terms), job.Net.NumParams())
	// ∇F outside the span of J (png.Gradient.Extra) when the criterion
	// reads terms or drift, and θ₀ when it reads drift.
	drift := false
	for _, v := range criterion.VarsOf(s.Criterion) {
		drift = drift || v == criterion.Drift
	}
	switch {
	case drift:
		extra += 2 * vec
	case len(job.Terms) > 0:
		extra += vec
	}
	if job.Accumulate > 1 { // the micro-batches' Jacobian beside the step's
		extra += rows
	}
	// The before/after report pass (Evaluate) holds its own Jacobian in
	// place of the loop's vectors and J (the loop's are made after the
	// first report pass and are garbage before the second), and its
	// running average when the report set spans several batches. Saving
	// runs after Net.ReleaseBuffers, from the step's released buffers.
	report := rows
	if job.Report.Len() > job.microBatch() {
		report *= 2
	}
	extra = max(extra, report)
	if job.Memory, err = PlanMemoryLent(job.Net, job.Train, job.microBatch(), 1, extra, TuneLentBytes(job.Net.NumParams()), c.MaxMemory, job.Val); err != nil {
		return nil, err
	}
	// What the checkpoints hold to continue the run alone, with the
	// fingerprints of the files read (once they are known to be good).
	if s.CheckpointJob, err = c.checkpointRecord(); err != nil {
		return nil, err
	}
	return job, nil
}

// destinations lists what the tune job reads and writes (Destinations):
// a resumed run continues its own log, trace and checkpoint.
func (c *TuneConfig) destinations(job *Tune) *Destinations {
	d := &Destinations{Force: job.Force, MakeFolders: c.MakeFolders}
	d.ModelInput("model", c.Model, job.Model)
	d.Sources("--data", c.Data)
	d.Sources("--val", c.Val)
	d.Input("--config file", c.ConfigFile)
	resumed := job.Resume != ""
	same, _ := SamePath(job.Resume, job.Checkpoint)
	if resumed && !same {
		d.Input("--resume checkpoint", job.Resume)
	}
	d.ModelOutput("--out", job.Out, job.Model)
	for _, o := range []struct{ flag, path string }{{"--log", c.Log}, {"--csv", c.CSV}} {
		if resumed {
			d.Own(o.flag, o.path)
		} else {
			d.Output(o.flag, o.path)
		}
	}
	d.Output("--plot", c.Plot)
	// A fresh run's existing checkpoint is refused with its own message
	// (freshCheckpoint).
	d.Own("--checkpoint", job.Checkpoint)
	return d
}

// missingData is the error for a job given no data sources for flag.
func missingData(flag, what string) error {
	return fmt.Errorf("--%s: required (%s: FILE.npz, NAME=FILE.npy or NAME=FILE.idx, repeatable; or folder:DIR or nyuv2:DIR)", flag, what)
}

// measured is one measurement of the model on the report set, beside
// its report: the task losses, the criterion's variables (VarsOf) and the
// Gram matrix of the task gradients.
type measured struct {
	losses, x, gram []float64
}

// measure evaluates the criterion on the report set; drift is
// ‖θ − θ₀‖² of the parameters measured (0 before training).
func (j *Tune) measure(drift float64) (TuneReport, measured, error) {
	r, err := Evaluate(j.Net, j.Report, j.microBatch(), true, j.Tasks)
	if err != nil {
		return TuneReport{}, measured{}, fmt.Errorf("%s data: %w", j.ReportName, err)
	}
	x := append(append([]float64(nil), r.Losses...), r.Terms...)
	rep := TuneReport{Losses: named(j.Net.Tasks(), r.Losses), G: Num(r.G), Metrics: NumMetrics(r.Metrics)}
	if len(r.Terms) > 0 {
		rep.Terms = named(j.Net.Terms(), r.Terms)
	}
	if vars := criterion.VarsOf(j.Settings.Criterion); len(vars) > len(x) && vars[len(x)] == criterion.Drift {
		x = append(x, drift)
		d := Num(drift)
		rep.Drift = &d
	}
	// A criterion outside its domain is reported as NaN (null in JSON);
	// the training loop decides what that means for the run.
	F, err := j.Settings.Criterion.Eval(x, nil)
	if err != nil {
		F = math.NaN()
	}
	rep.F = Num(F)
	return rep, measured{losses: r.Losses, x: x, gram: r.Gram}, nil
}

// Run measures the model, trains it, measures it again and saves it. On
// an error before the model is saved (interruption, non-finite values)
// nothing is written to Out. Once trained, the model is never lost: when
// Out cannot be written it is saved beside it (or in the checkpoint's
// folder, the working folder or the system's temporary folder), the
// checkpoint stays, and the error says where (TuneOutcome.Kept). A log,
// trace or plot that cannot be written is reported after the model is
// saved, with the outcome.
func (j *Tune) Run(ctx context.Context) (res *TuneOutcome, err error) {
	if j.Checkpoint != "" {
		lock, err := lockRun("--checkpoint", j.Checkpoint)
		if err != nil {
			return nil, err
		}
		defer lock.release()
		atomicfile.RemoveStale(j.Checkpoint, j.Out, filepath.Join(filepath.Dir(j.Out), importer.DataFileName(j.Out)), j.LogPath, j.CSVPath, j.PlotPath)
	}
	res = &TuneOutcome{Criterion: j.Criterion, Method: j.Method, Tasks: j.Net.Tasks(), Terms: j.Net.Terms(), MeasuredOn: j.ReportName,
		Examples: j.Report.Len(), Output: j.Out, Log: j.LogPath, CSV: j.CSVPath}
	var before, after measured
	if res.Before, before, err = j.measure(0); err != nil {
		return nil, fmt.Errorf("before training: %w", err)
	}
	res.BeforeLosses = before.losses
	// The report pass's J is garbage once measured and the loop makes its
	// own J and vectors at once, as the second report pass makes its J
	// while the loop's are garbage: collecting at each change keeps the
	// two from being on the heap together (at 288×384 the full MTAN's
	// heap reached 7.2 GB against 6.8 GB planned for the collector, with
	// 1.4 GB of the loop's left when the second pass began).
	runtime.GC()
	trace := &traceRecorder{}
	recs := []finetune.Recorder{trace}
	if j.Progress != nil {
		recs = append(recs, finetune.NewProgress(j.Progress))
	}
	step := -1
	if j.Resume != "" {
		step = j.resumeStep
	}
	traced, closeFiles, err := traceRecorders("--csv", j.CSVPath, j.LogPath, step)
	if err != nil {
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			err = errors.Join(err, closeFiles())
		}
	}()
	recs = append(recs, traced...)
	recs = append(recs, j.Extra...)
	var fr *finetune.Result
	if j.Resume != "" {
		fr, err = finetune.Resume(ctx, j.Resume, j.problem(), j.Train, j.Val, j.Settings, finetune.Multi(recs...))
	} else {
		fr, err = finetune.Run(ctx, j.problem(), j.Train, j.Val, j.Settings, finetune.Multi(recs...))
	}
	runtime.GC() // the loop's J and vectors, before the second report pass
	if err != nil {
		if errors.Is(err, finetune.ErrNonFinite) {
			return nil, fmt.Errorf("tune: %w; no model written", err)
		}
		return nil, explainNegative(err, j.Tasks)
	}
	res.Status, res.Steps = fr.Status.String(), fr.Steps
	if fr.CheckpointErr != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("a checkpoint could not be written during the run: %v", fr.CheckpointErr))
	}
	if err := j.Net.SetParams(fr.Points[0].Params); err != nil {
		return nil, err
	}
	if res.After, after, err = j.measure(fr.Points[0].Drift); err != nil {
		return nil, fmt.Errorf("after training: %w", err)
	}
	res.AfterLosses = after.losses
	res.InBand, res.BandSteps = InBand(trace.G, trace.E, 100)
	res.Explanation = j.explain(before, after, &trace.stepTrace)
	record := map[string]any{
		"version": Version, "criterion": j.Criterion, "method": j.Method, "steps": fr.Steps,
		"tasks": TaskSpecs(j.Tasks), "source": filepath.Base(j.ModelPath),
		"optimizer": j.Settings.Optimizer, "lr": j.Settings.LR,
	}
	if j.RunID != "" {
		record["run"] = j.RunID
	}
	if len(j.Terms) > 0 {
		record["terms"] = TaskSpecs(j.Terms)
	}
	meta, err := json.Marshal(record)
	if err != nil {
		return nil, err
	}
	// Saving copies the parameters about four times (Weights, the cloned
	// model's data, the new data, the encoded file): the step's pooled
	// buffers, idle from here on, make room for them.
	j.Net.ReleaseBuffers()
	save := func(path string) error {
		return importer.Save(path, j.Model, j.Net.Weights(), importer.SaveOptions{
			Producer: map[string]string{"paretonav": string(meta)}, Force: j.Force && path == j.Out,
		})
	}
	closed = true
	sideErr := closeFiles()
	if err := save(j.Out); err != nil {
		werr := fmt.Errorf("--out %s: %w", j.Out, err)
		kept, kerr := keepModel(j.Out, j.Checkpoint, save)
		if kerr != nil {
			werr = fmt.Errorf("%w; the tuned model could not be kept anywhere either (%v)", werr, kerr)
		} else {
			res.Kept = kept
			werr = fmt.Errorf("%w; the tuned model is kept in %s (move it where you want it)", werr, kept)
		}
		if fr.Checkpoint != "" {
			res.Checkpoint = fr.Checkpoint
		}
		return res, errors.Join(werr, sideErr)
	}
	if err := j.finishCheckpoint(res, fr); err != nil {
		res.Warnings = append(res.Warnings, err.Error())
	}
	if j.Plot != nil && j.PlotPath != "" {
		if perr := j.Plot(j.PlotPath, res); perr != nil {
			sideErr = errors.Join(sideErr, perr)
		} else {
			res.Plot = j.PlotPath
		}
	}
	res.confirmFiles()
	if sideErr != nil {
		return res, fmt.Errorf("the tuned model was written to %s, but: %w", j.Out, sideErr)
	}
	return res, nil
}

// confirmFiles drops from res the files it names that are no longer
// there (their folder removed during the run, a full disk), each with a
// warning, so that the summary lists only files that exist.
func (res *TuneOutcome) confirmFiles() {
	for _, f := range []struct {
		what string
		path *string
	}{{"log", &res.Log}, {"trace", &res.CSV}, {"plot", &res.Plot}, {"checkpoint", &res.Checkpoint}} {
		if *f.path == "" {
			continue
		}
		if _, err := os.Stat(*f.path); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the %s %s is no longer there (%v)", f.what, *f.path, errors.Unwrap(err)))
			*f.path = ""
		}
	}
	if _, err := os.Stat(res.Output); err != nil && res.Kept == "" {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the tuned model %s is no longer there (%v)", res.Output, errors.Unwrap(err)))
	}
}

// finishCheckpoint removes the run's checkpoint once the model is
// written, unless KeepCheckpoint, and says so in res.
func (j *Tune) finishCheckpoint(res *TuneOutcome, fr *finetune.Result) error {
	ckpt := j.Checkpoint
	if ckpt == "" {
		ckpt = j.Settings.CheckpointPath
	}
	if ckpt == "" {
		return nil
	}
	var err error
	res.Checkpoint, res.CheckpointRemoved, err = finishCheckpoint(ckpt, fr.Checkpoint != "", j.Resume, j.staleCheckpoint, j.KeepCheckpoint)
	return err
}

// finishCheckpoint removes the checkpoint ckpt once a run's results are
// written, unless keep, and returns the path to report as kept or as
// removed. The checkpoint is the run's own when the run wrote one
// (written) or resumed from it; another run's is removed only when the
// run was told to start over it (stale).
func finishCheckpoint(ckpt string, written bool, resume string, stale, keep bool) (kept, removed string, err error) {
	if _, err := os.Stat(ckpt); err != nil {
		return "", "", nil
	}
	ours := written
	if !ours && resume != "" {
		ours, _ = SamePath(resume, ckpt)
	}
	if !ours && !stale {
		return "", "", nil
	}
	if ours && keep {
		return ckpt, "", nil
	}
	if err := os.Remove(ckpt); err != nil {
		if ours {
			kept = ckpt
		}
		return kept, "", fmt.Errorf("the checkpoint %s could not be removed: %w", ckpt, err)
	}
	return "", ckpt, nil
}

// keepModel saves a trained model that could not be written to out
// somewhere else: beside out, in the checkpoint's folder, in the working
// folder or in the system's temporary folder, under a name no file has.
// It returns where.
func keepModel(out, ckpt string, save func(string) error) (string, error) {
	base := strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
	dirs := []string{filepath.Dir(out)}
	if ckpt != "" {
		dirs = append(dirs, filepath.Dir(ckpt))
	}
	dirs = append(dirs, ".", os.TempDir())
	var errs []error
	for _, dir := range dirs {
		for k := 0; k < 100; k++ {
			name := base + ".kept.onnx"
			if k > 0 {
				name = fmt.Sprintf("%s.kept-%d.onnx", base, k)
			}
			p := filepath.Join(dir, name)
			if _, err := os.Lstat(p); err == nil {
				continue
			}
			if err := save(p); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
				break
			}
			return p, nil
		}
	}
	return "", errors.Join(errs...)
}

// TaskSpecs writes the tasks as the specs --task takes.
func TaskSpecs(ts []backend.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return out
}

// traceRecorder keeps what explain reads of every step (of the first
// model).
type traceRecorder struct{ stepTrace }

func (t *traceRecorder) Init(*finetune.Config) error { return nil }

func (t *traceRecorder) Record(st *finetune.Step) error {
	t.record(st.Points[0])
	return nil
}

func (t *traceRecorder) Done(*finetune.Result) error { return nil }

// explain tells what the run did (Explanation) from its steps and the
// measurements before and after.
func (j *Tune) explain(before, after measured, tr *stepTrace) *Explanation {
	in := explainInput{Method: j.Method, Tasks: j.Net.Tasks(), Crit: j.Settings.Criterion, CritText: j.Criterion,
		Before: before.x, After: after.x, MeasuredOn: j.ReportName, Gram: after.gram, Trace: *tr}
	m := j.Settings.Method
	if j.resumeStep > 0 {
		in.Resumed = j.resumeStep
	}
	if s, ok := m.(png.Staged); ok {
		in.Skip, m = s.Steps, s.Then
		if j.resumeStep > 0 { // the first stage's steps before the resumed step are not in tr
			in.Skip = max(0, s.Steps-j.resumeStep)
		}
	}
	if p, ok := m.(png.PNG); ok {
		in.Gamma, in.MaxTradeoff = p.Settings.Gamma, p.Settings.MaxTradeoff
		if in.Gamma == 0 {
			in.Gamma = png.DefaultGamma
		}
	}
	return explain(in)
}

// InBand returns the fraction of the last (up to) k steps in the Pareto
// band, g ≤ e (g and e one value a step), and how many steps that is. It
// counts g ≤ e, not the control being off: the improper-trade guard keeps
// the control on inside the band.
func InBand(g, e []float64, k int) (Num, int) {
	n := min(k, len(g))
	if n == 0 {
		return 0, 0
	}
	in := 0
	for i := len(g) - n; i < len(g); i++ {
		if g[i] <= e[i] {
			in++
		}
	}
	return Num(float64(in) / float64(n)), n
}

// microBatch is the most examples one evaluation runs at once: the batch,
// or its largest part with --accumulate.
func (j *Tune) microBatch() int {
	if j.Accumulate <= 1 {
		return j.Batch
	}
	return (j.Batch + j.Accumulate - 1) / j.Accumulate
}

// problem is what the loop trains: the model, evaluated in micro-batches
// with --accumulate.
func (j *Tune) problem() finetune.Problem {
	return finetune.Accumulate(j.Net, j.Accumulate)
}
