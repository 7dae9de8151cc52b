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
	"strings"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// Defaults of tune: the paper's step size with Adam, its γ for real
// models, and small batches.
const (
	TuneLR = 1e-3
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
	TuneBatch       = 32
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

// TuneConfig is a tune job as the tune command's flags give it.
type TuneConfig struct {
	Model     string   // MODEL.onnx
	Data, Val []string // --data, --val sources
	ModelConfig
	Criterion string
	Method    MethodConfig
	Optimizer string
	LR        float64 // 0: TuneLR
	Momentum  float64
	// LRSchedule is constant, cosine or step.
	LRSchedule string
	// Steps, or Epochs passes over Data when Steps is 0.
	Steps, Epochs int
	Batch         int
	// Accumulate splits every batch into this many micro-batches run one
	// after the other (finetune.Accumulate): the step of --batch B at the
	// memory of B/Accumulate. 0 or 1: whole batches.
	Accumulate int
	ValEvery   int
	Seed       int64
	// Out is the tuned model (default MODEL_tuned.onnx); Force overwrites
	// an existing one.
	Out   string
	Force bool
	// Log (JSON lines) and CSV (per-step trace) are written when set.
	Log, CSV string
	// CheckpointEvery steps a checkpoint is written to Checkpoint
	// (default OUT.ckpt), also on interruption; Resume continues one.
	CheckpointEvery    int
	Checkpoint, Resume string
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
	Resume     string
	Progress   io.Writer // nil: no progress lines
	// Warnings are found by Prepare (tied parameters, SharedWarning) for
	// the caller to show once.
	Warnings []string
	Memory   *MemoryPlan // the expected peak, checked against the limit
	Extra    []finetune.Recorder
	// AppendLog continues the log at LogPath instead of replacing it
	// (batch runs resuming a job).
	AppendLog bool
	// BeforeSave, when set, is called after training and the final
	// measurement, before the model is written (the command draws its
	// plot there); an error stops the run with nothing written.
	BeforeSave func(*TuneOutcome) error
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
	// the control off (PNG only).
	InBand     Num    `json:"in_band_last100"`
	BandSteps  int    `json:"band_steps"`
	Output     string `json:"output"`
	Checkpoint string `json:"checkpoint,omitempty"`
	Log        string `json:"log,omitempty"`
	Plot       string `json:"plot,omitempty"`

	// BeforeLosses and AfterLosses are the task losses on the report set,
	// in task order.
	BeforeLosses []float64 `json:"-"`
	AfterLosses  []float64 `json:"-"`
}

// Prepare checks c and resolves it into a run: model and data (read
// through l, which may be nil) checked against each other, destinations
// checked, before any training.
func (c *TuneConfig) Prepare(l *Loader) (*Tune, error) {
	job := &Tune{ModelPath: c.Model, Method: c.Method.Name, Batch: c.Batch, Force: c.Force,
		LogPath: c.Log, CSVPath: c.CSV, Resume: c.Resume}
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
	job.Out = c.Out
	if job.Out == "" {
		job.Out = strings.TrimSuffix(job.ModelPath, filepath.Ext(job.ModelPath)) + "_tuned.onnx"
	}
	if err := CheckOutput(job.ModelPath, job.Out, job.Force); err != nil {
		return nil, err
	}
	ckpt := c.Checkpoint
	if ckpt == "" {
		ckpt = job.Out + ".ckpt"
	}
	if same, _ := SamePath(ckpt, job.ModelPath); same {
		return nil, fmt.Errorf("--checkpoint %s: that is the input model", ckpt)
	}
	if job.Resume != "" {
		if _, err := os.Stat(job.Resume); err != nil {
			return nil, fmt.Errorf("--resume: %w", err)
		}
	}
	tasks, maps, opt, err := c.ModelConfig.resolve()
	if err != nil {
		return nil, err
	}
	job.Tasks, job.Terms = tasks, opt.Terms
	if job.Model, job.Net, err = OpenModel(l, job.ModelPath, job.Tasks, opt); err != nil {
		return nil, err
	}
	if job.Net.NumParams() == 0 {
		return nil, fmt.Errorf("%s: nothing to train (no trainable initializer; check --freeze)", job.ModelPath)
	}
	if w := SharedWarning(job.ModelPath, job.Net); w != "" {
		job.Warnings = append(job.Warnings, w)
	}
	names := job.Net.Tasks()
	// tune keeps TuneLR for both optimizers (TuneSGDLR is front's): its
	// criterion's gradient ∂F/∂ℓ has any scale (13 for wd:0.3,0.3 at
	// chance-level losses), and SGD's step scales with it, so no fixed SGD
	// rate suits every criterion (momentum 0.9 at 0.03 killed an untrained
	// LeNet2 in 12 steps with wd:0.3,0.3); Adam's step does not depend on
	// that scale, which is why it is tune's default.
	lr := c.LR
	if lr == 0 {
		lr = TuneLR
	}
	s := &finetune.Settings{
		Optimizer: c.Optimizer, LR: lr, Momentum: c.Momentum,
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

	bind := Binding{Model: job.Net, Tasks: job.Tasks, Terms: job.Terms, Maps: maps}
	if err := bind.Check(); err != nil {
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
			job.Report = &finetune.Dataset{Arrays: job.Train.Slice(0, tuneReportMax)}
		}
	}
	job.Warnings = append(job.Warnings, bind.Warnings...)
	rows := int64(len(job.Tasks)+len(job.Terms)) * 4 * int64(job.Net.NumParams()) // one Jacobian
	extra := TuneLoopBytes(job.Net.NumParams())
	if job.Accumulate > 1 { // the micro-batches' Jacobian beside the step's
		extra += rows
	}
	// The before/after report pass (Evaluate) holds its own Jacobian in
	// place of the loop's vectors, and its running average when the
	// report set spans several batches. Saving runs after
	// Net.ReleaseBuffers, from the step's released buffers.
	report := rows
	if job.Report.Len() > job.microBatch() {
		report *= 2
	}
	extra = max(extra, report)
	if job.Memory, err = PlanMemory(job.Net, job.Train, job.microBatch(), 1, extra, c.MaxMemory); err != nil {
		return nil, err
	}
	return job, nil
}

// missingData is the error for a job given no data sources for flag.
func missingData(flag, what string) error {
	return fmt.Errorf("--%s: required (%s: FILE.npz, NAME=FILE.npy or NAME=FILE.idx, repeatable)", flag, what)
}

// measure evaluates the criterion on the report set; drift is
// ‖θ − θ₀‖² of the parameters measured (0 before training).
func (j *Tune) measure(drift float64) (TuneReport, []float64, error) {
	r, err := Evaluate(j.Net, j.Report, j.microBatch(), true, j.Tasks)
	if err != nil {
		return TuneReport{}, nil, fmt.Errorf("%s data: %w", j.ReportName, err)
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
	return rep, r.Losses, nil
}

// Run measures the model, trains it, measures it again and saves it. On
// any error (interruption, non-finite values) nothing is written to Out.
func (j *Tune) Run(ctx context.Context) (res *TuneOutcome, err error) {
	res = &TuneOutcome{Criterion: j.Criterion, Method: j.Method, Tasks: j.Net.Tasks(), Terms: j.Net.Terms(), MeasuredOn: j.ReportName,
		Examples: j.Report.Len(), Output: j.Out, Log: j.LogPath}
	if res.Before, res.BeforeLosses, err = j.measure(0); err != nil {
		return nil, fmt.Errorf("before training: %w", err)
	}
	band := &bandRecorder{}
	recs := []finetune.Recorder{band}
	if j.Progress != nil {
		recs = append(recs, finetune.NewProgress(j.Progress))
	}
	traced, closeFiles, err := traceRecorders("--csv", j.CSVPath, j.LogPath, j.AppendLog)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, closeFiles()) }()
	recs = append(recs, traced...)
	recs = append(recs, j.Extra...)
	var fr *finetune.Result
	if j.Resume != "" {
		fr, err = finetune.Resume(ctx, j.Resume, j.problem(), j.Train, j.Val, j.Settings, finetune.Multi(recs...))
	} else {
		fr, err = finetune.Run(ctx, j.problem(), j.Train, j.Val, j.Settings, finetune.Multi(recs...))
	}
	if err != nil {
		if errors.Is(err, finetune.ErrNonFinite) {
			return nil, fmt.Errorf("tune: %w; no model written", err)
		}
		return nil, explainNegative(err, j.Tasks)
	}
	res.Status, res.Steps, res.Checkpoint = fr.Status.String(), fr.Steps, fr.Checkpoint
	if err := j.Net.SetParams(fr.Points[0].Params); err != nil {
		return nil, err
	}
	if res.After, res.AfterLosses, err = j.measure(fr.Points[0].Drift); err != nil {
		return nil, fmt.Errorf("after training: %w", err)
	}
	res.InBand, res.BandSteps = InBand(band.on, 100)
	if j.BeforeSave != nil {
		if err := j.BeforeSave(res); err != nil {
			return nil, err
		}
	}
	record := map[string]any{
		"version": Version, "criterion": j.Criterion, "method": j.Method, "steps": fr.Steps,
		"tasks": TaskSpecs(j.Tasks), "source": filepath.Base(j.ModelPath),
		"optimizer": j.Settings.Optimizer, "lr": j.Settings.LR,
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
	if err := importer.Save(j.Out, j.Model, j.Net.Weights(), importer.SaveOptions{
		Producer: map[string]string{"paretonav": string(meta)}, Force: j.Force,
	}); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	return res, nil
}

// TaskSpecs writes the tasks as the specs --task takes.
func TaskSpecs(ts []backend.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return out
}

// bandRecorder keeps, for every step, whether the control was on (of the
// first model).
type bandRecorder struct{ on []bool }

func (b *bandRecorder) Init(*finetune.Config) error { return nil }

func (b *bandRecorder) Record(st *finetune.Step) error {
	b.on = append(b.on, st.Points[0].Info.ControlOn)
	return nil
}

func (b *bandRecorder) Done(*finetune.Result) error { return nil }

// InBand returns the fraction of the last (up to) k steps of on with the
// control off (g ≤ e), and how many steps that is.
func InBand(on []bool, k int) (Num, int) {
	n := min(k, len(on))
	if n == 0 {
		return 0, 0
	}
	in := 0
	for _, o := range on[len(on)-n:] {
		if !o {
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
