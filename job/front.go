package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/finetune/front"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models/synthetic"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// Defaults of front for ONNX models: the paper's MultiMNIST setting (Adam,
// lr 1e-3, batch 256, γ 0.1; SGD: momentum TuneSGDMomentum at lr
// TuneSGDLR), with the threshold capped at png.RobustThresholdCap times
// its warm-up value so that models trained from scratch keep the control on
// when gradients explode, free steps limited to proper trades
// (png.RobustMaxTradeoff), and the energy asking only for trades
// (EnergyTrade). Spread perturbs every parameter of the one starting model
// by N(0, spread²) so that the N models start apart.
// Synthetic problems use the Synth* defaults instead.
const (
	FrontBatch  = 256
	FrontSteps  = 1000
	FrontSpread = 0.01
	FrontModels = 5
	// frontReportMax caps the training examples scored when no
	// validation data are given.
	frontReportMax = 2048
)

// Values of FrontConfig.EnergyPush.
const (
	EnergyTrade = "trade"
	EnergyFull  = "full"
)

// Defaults of the synthetic problems (synth, and front --problem): plain
// steps, lr 0.005, 10000 steps, the paper's γ 0.01 for its synthetic
// experiments, spread 0.1, and the hypervolume reference SynthRef. They
// are chosen so that the paper's experiments converge with plain gradient
// steps: on exp2 the wd presets reach their optimum on the front (losses
// within 1e-6, g ≤ 1e-9) well before 10000 steps. The step size is
// bounded by zdt2v, whose gradients grow with θ: from the paper's init,
// lr 0.02 diverges and 0.01 is at the edge; 0.005 keeps a margin.
const (
	SynthLR     = 0.005
	SynthSteps  = 10000
	SynthGamma  = 0.01
	SynthSpread = 0.1
	// SynthRef is the default hypervolume reference with a synthetic
	// problem: the synthetic fronts reach losses of 1, beyond 0.6.
	SynthRef = 1.1
)

// FrontConfig is a front job as the front command's flags give it.
// Optional numbers are pointers: nil takes the default of ONNX models or
// of synthetic problems. The flag tags name each field's flag, as in
// TuneConfig: a resumed run takes them from its checkpoint.
type FrontConfig struct {
	Problem string   `flag:"problem"`     // a synthetic problem instead of ONNX models
	Args    []string `flag:"MODEL,paths"` // MODEL.onnx (at most one)
	Data    []string `flag:"data,sources"`
	Val     []string `flag:"val,sources"`
	ModelConfig
	Models int      `flag:"models"`        // N
	Init   string   `flag:"init,pathlist"` // A.onnx,B.onnx,...: one starting model each
	Spread *float64 `flag:"spread"`
	// Criterion is energy[:eps=E], optionally + EXPR: a per-model
	// criterion over the tasks, the terms and drift added for every model
	// ("energy + 0.01*drift").
	Criterion string `flag:"criterion"`
	// Method is png (the default when empty: multi-point PNG with the
	// criterion) or epo (model k follows EPO toward its own preference
	// ray; the criterion is then only reported).
	Method string `flag:"method"`
	// Preference is EPO's preference per model, "R1,R2,...;R1,R2,...;..."
	// (N vectors); empty means the rays EvenPreferences gives.
	Preference string `flag:"preference"`
	// EnergyScale is finetune.Settings.MultiScale: model (the default,
	// also ""), shared or raw.
	EnergyScale string `flag:"energy-scale"`
	// EnergyPush is trade (finetune.Settings.MultiTrade: the energy asks
	// each model only for trades) or full (the paper's energy); "" is
	// trade for ONNX models and full for synthetic problems.
	EnergyPush string   `flag:"energy-push"`
	Alpha      float64  `flag:"alpha"`
	Gamma      *float64 `flag:"gamma"`
	Optimizer  string   `flag:"optimizer"` // "": adam, sgd for synthetic problems
	LR         *float64 `flag:"lr"`
	// Momentum is SGD's momentum μ; nil: DefaultMomentum for ONNX models,
	// 0 (plain steps) for synthetic problems.
	Momentum *float64 `flag:"momentum"`
	// LRSchedule is constant, cosine or step.
	LRSchedule string `flag:"lr-schedule"`
	Steps      int    `flag:"steps"`
	Epochs     int    `flag:"epochs"`
	Batch      int    `flag:"batch"`
	Workers    int    `flag:"workers"`
	Seed       int64  `flag:"seed"`
	OutDir     string `flag:"out-dir,path,dest"`
	Ref        string `flag:"ref"`            // --ref: one value or one per task
	Reference  string `flag:"reference,path"` // --reference FILE.csv
	// Force replaces existing files (never an input; a resumed run has
	// Force only when its own command line gives it).
	Force bool
	Log   string `flag:"log,path,dest"`
	CSV   string `flag:"csv,path,dest"`
	// CheckpointEvery steps a checkpoint is written to Checkpoint
	// (default OUT_DIR/front.ckpt), removed once the models are written
	// unless KeepCheckpoint; Resume continues one, from its stored
	// configuration (see TuneConfig.Resume and Given).
	CheckpointEvery int    `flag:"checkpoint-every"`
	Checkpoint      string `flag:"checkpoint,path,dest"`
	KeepCheckpoint  bool   `flag:"keep-checkpoint,free"`
	Resume          string
	Given           map[string]bool `json:"-"`
	ConfigFile      string          `json:"-"`
	MakeFolders     bool            `json:"-"`
}

// Front is a resolved front run: N problems and how to score them.
type Front struct {
	cfg       *FrontConfig
	label     string // what trained the models, in the report: the criterion, or EPO and its preferences
	tasks     []string
	btasks    []backend.Task     // ONNX only
	terms     []string           // ONNX only: --term names
	nets      []*backend.Model   // ONNX only
	models    []*importer.Model  // ONNX only: the file each net saves into
	probs     []finetune.Problem // what the loop trains
	synth     *synthetic.Problem // synthetic only: for the true front
	train     *finetune.Dataset
	val       *finetune.Dataset
	score     *finetune.Dataset
	scoredOn  string
	batch     int
	s         *finetune.Settings
	source    string
	ref       []float64
	reference [][]float64
	refName   string

	resumed int // the step of the checkpoint a resumed run continues, -1 for a fresh run
	// staleCheckpoint: the checkpoint path held another run's checkpoint
	// when this one started over it (--force).
	staleCheckpoint bool

	// Progress receives progress lines (nil: none).
	Progress io.Writer
	// Warnings are found by Prepare (tied parameters, SharedWarning, once
	// per distinct model file) for the caller to show once.
	Warnings []string
	// Memory is the expected peak (ONNX models; nil for synthetic
	// problems), checked against the limit.
	Memory *MemoryPlan
	// Plot, when set, draws the models in loss space to path (front.png).
	Plot FrontPlotFunc
}

// Prepare checks c and resolves it into a run: models and data (read
// through l, which may be nil), settings, the quality measures' reference
// points, all before any training.
func (c *FrontConfig) Prepare(l *Loader) (*Front, error) {
	resumeStep := -1
	if c.Resume != "" {
		saved, step, err := resumeConfig("front", c.Resume, c.withDefaults(), c.Given)
		if err != nil {
			return nil, err
		}
		saved.Force = c.Force // never the checkpoint's: it is no authority to replace files
		saved.Resume, saved.ConfigFile, saved.MakeFolders = c.Resume, c.ConfigFile, c.MakeFolders
		c, resumeStep = saved, step
	}
	if c.OutDir == "" {
		return nil, errors.New("--out-dir: required (the folder for the models, front.csv, front.png and report.json)")
	}
	N := c.Models
	if N < 2 {
		return nil, fmt.Errorf("--models %d: want at least 2 (a front needs several models)", N)
	}
	job := &Front{cfg: c, batch: c.Batch, resumed: resumeStep}
	if job.batch < 1 {
		return nil, fmt.Errorf("--batch %d: want at least 1", job.batch)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"steps", c.Steps}, {"epochs", c.Epochs}, {"checkpoint-every", c.CheckpointEvery}, {"workers", c.Workers}} {
		if f.v < 0 {
			return nil, fmt.Errorf("--%s %d: want ≥ 0", f.name, f.v)
		}
	}
	if err := finetune.CheckMultiScale(c.EnergyScale); err != nil {
		return nil, fmt.Errorf("--energy-scale %w", err)
	}
	synth := c.Problem != ""
	trade := !synth
	switch c.EnergyPush {
	case "":
	case EnergyTrade:
		trade = true
	case EnergyFull:
		trade = false
	default:
		return nil, fmt.Errorf("--energy-push %q: want %s or %s", c.EnergyPush, EnergyTrade, EnergyFull)
	}
	// The defaults that depend on the kind of problem are filled in once,
	// by defaulted, the same values a checkpoint stores.
	d := c.defaulted()
	if err := CheckPNG(c.Alpha, *d.Gamma); err != nil {
		return nil, err
	}
	if err := CheckPositive("--lr", *d.LR, "the learning rate"); err != nil {
		return nil, err
	}
	if err := CheckMomentum(*d.Momentum); err != nil {
		return nil, err
	}
	spread := *d.Spread
	ps := png.Settings{Alpha: c.Alpha, Gamma: *d.Gamma}
	if !synth {
		ps.ThresholdCap = png.RobustThresholdCap
		ps.MaxTradeoff = png.RobustMaxTradeoff
	}
	job.s = &finetune.Settings{
		Method:    png.PNG{Settings: ps},
		Optimizer: d.Optimizer, LR: *d.LR, LRSchedule: c.LRSchedule,
		Momentum: *d.Momentum,
		Steps:    d.Steps, Epochs: c.Epochs, BatchSize: job.batch, Seed: c.Seed,
		CheckpointEvery: c.CheckpointEvery, CheckpointPath: c.Checkpoint, Workers: c.Workers,
		MultiScale: c.EnergyScale, MultiTrade: trade,
		Meta: map[string]any{"command": "front", "models": N},
	}
	var err error
	if synth {
		err = job.synthetic(N, spread)
	} else {
		err = job.onnx(l, N, spread)
	}
	if err != nil {
		return nil, err
	}
	spec := c.Criterion
	if !strings.HasPrefix(strings.TrimSpace(spec), "energy") {
		return nil, fmt.Errorf("--criterion %q: front trains with a multi-point criterion: energy[:eps=E], optionally + a per-model expression", spec)
	}
	if job.s.Multi, job.s.PerModel, err = criterion.ParseMultiPoint(spec, job.tasks, job.terms...); err != nil {
		return nil, fmt.Errorf("--criterion: %w", err)
	}
	job.s.Meta["criterion"] = spec
	if err := job.epo(N); err != nil {
		return nil, err
	}
	job.s.Meta["source"] = job.source
	if job.s.CheckpointPath == "" {
		job.s.CheckpointPath = filepath.Join(c.OutDir, "front.ckpt")
	}
	if err := job.destinations(); err != nil {
		return nil, err
	}
	if job.s.CheckpointJob, err = c.checkpointRecord(); err != nil {
		return nil, err
	}
	// The quality measures' settings are read before training so that a
	// mistake in them costs no run.
	if job.ref, err = c.refPoint(len(job.tasks)); err != nil {
		return nil, err
	}
	if job.reference, job.refName, err = job.referenceFront(c.Reference); err != nil {
		return nil, err
	}
	return job, nil
}

// synthetic prepares N copies of a synthetic problem around the paper's
// initial point.
func (j *Front) synthetic(N int, spread float64) error {
	c := j.cfg
	if c.Args != nil || len(c.Data) > 0 || c.Init != "" || len(c.Terms) > 0 {
		return errors.New("--problem: takes no MODEL.onnx, --data, --init or --term")
	}
	for k := 0; k < N; k++ {
		p, err := synthetic.New(c.Problem)
		if err != nil {
			return fmt.Errorf("--problem: %w", err)
		}
		if err := p.SetParams(synthetic.DefaultInit(p.NumParams())); err != nil {
			return err
		}
		if k == 0 {
			j.synth = p
		}
		j.probs = append(j.probs, p)
	}
	if err := front.Perturb(j.probs, spread, c.Seed); err != nil {
		return fmt.Errorf("--spread: %w", err)
	}
	j.tasks, j.source, j.scoredOn = j.probs[0].Tasks(), c.Problem, "exact losses"
	return nil
}

// onnx opens N backend models, from MODEL.onnx (perturbed) or --init, and
// loads the data.
func (j *Front) onnx(l *Loader, N int, spread float64) error {
	c := j.cfg
	args := c.Args
	var paths []string
	switch {
	case c.Init != "":
		for _, p := range strings.Split(c.Init, ",") {
			paths = append(paths, strings.TrimSpace(p))
		}
		if len(paths) != N {
			return fmt.Errorf("--init %q: %d models, want --models %d", c.Init, len(paths), N)
		}
		if len(args) > 1 {
			return fmt.Errorf("front: with --init, at most one MODEL.onnx argument (got %d)", len(args))
		}
		j.source = paths[0]
	case len(args) == 1:
		j.source = args[0]
		for range N {
			paths = append(paths, args[0])
		}
	default:
		return fmt.Errorf("front: want one MODEL.onnx argument (or --init, or --problem), got %d", len(args))
	}
	if len(c.Data) == 0 {
		return missingData("data", "the training data")
	}
	dataPath := strings.Join(c.Data, ",")
	setup, err := c.ModelConfig.setup()
	if err != nil {
		return err
	}
	j.btasks = setup.tasks
	for _, t := range setup.opt.Terms {
		j.terms = append(j.terms, t.Name)
	}
	if l == nil {
		// Each model gets its own copy of the graph: backend models on
		// different goroutines (--workers) must share no tensors.
		l = NewLoader()
	}
	for k, p := range paths {
		m, net, err := setup.open(l, p)
		if err != nil {
			return fmt.Errorf("model %d: %w", k, err)
		}
		if net.NumParams() == 0 {
			return fmt.Errorf("%s: nothing to train (no trainable initializer; check --freeze)", p)
		}
		if w := SharedWarning(p, net); w != "" && !slices.Contains(j.Warnings, w) {
			j.Warnings = append(j.Warnings, w)
		}
		for _, w := range []string{RewrittenWarning(p, m), ConstantsWarning(p, m)} {
			if w != "" && !slices.Contains(j.Warnings, w) {
				j.Warnings = append(j.Warnings, w)
			}
		}
		j.models, j.nets, j.probs = append(j.models, m), append(j.nets, net), append(j.probs, net)
	}
	if c.Init == "" {
		if err := front.Perturb(j.probs, spread, c.Seed); err != nil {
			return fmt.Errorf("--spread: %w", err)
		}
	}
	j.tasks = j.nets[0].Tasks()
	bind, err := setup.binding(j.nets[0], paths[0])
	if err != nil {
		return err
	}
	if j.train, err = bind.Load(l, "--data", c.Data, 0, j.batch); err != nil {
		return err
	}
	j.score, j.scoredOn = j.train, "training data "+dataPath
	if vs := c.Val; len(vs) > 0 {
		if j.val, err = bind.Load(l, "--val", vs, 0, j.batch); err != nil {
			return err
		}
		j.score, j.scoredOn = j.val, "validation data "+strings.Join(vs, ",")
	} else if j.train.Len() > frontReportMax {
		j.score = j.train.Prefix(frontReportMax)
		j.scoredOn = fmt.Sprintf("first %d examples of training data %s", frontReportMax, dataPath)
	}
	j.Warnings = append(j.Warnings, bind.Warnings...)
	j.s.Meta["data"] = dataPath
	extra := TuneLoopBytes(len(j.nets[0].Tasks()), j.nets[0].NumParams())
	if j.Memory, err = PlanMemoryLent(j.nets[0], j.train, j.batch, len(j.nets), extra, TuneLentBytes(j.nets[0].NumParams()), c.MaxMemory, j.val); err != nil {
		return err
	}
	return nil
}

// refPoint reads --ref: one value for every task or one per task.
func (c *FrontConfig) refPoint(m int) ([]float64, error) {
	s := c.Ref
	if s == "" && c.Problem != "" {
		return front.Uniform(m, SynthRef), nil
	}
	if s == "" {
		return front.Uniform(m, front.DefaultLossRef), nil
	}
	v, err := ParseFloats("--ref", s)
	if err != nil {
		return nil, err
	}
	switch len(v) {
	case 1:
		return front.Uniform(m, v[0]), nil
	case m:
		return v, nil
	}
	return nil, fmt.Errorf("--ref %q: %d values, want 1 or one per task (%d)", s, len(v), m)
}

// Run trains the N models together, scores them and writes the models,
// front.csv, front.png (through Plot) and report.json to the out folder.
func (j *Front) Run(ctx context.Context, extra ...finetune.Recorder) (out *FrontOutcome, err error) {
	c := j.cfg
	dir, N := c.OutDir, c.Models
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--out-dir: %w", err)
	}
	files := map[string]string{"csv": filepath.Join(dir, "front.csv"), "report": filepath.Join(dir, "report.json")}
	if j.Plot != nil {
		files["plot"] = filepath.Join(dir, "front.png")
	}
	var modelFiles []string
	for k := range j.nets {
		modelFiles = append(modelFiles, filepath.Join(dir, fmt.Sprintf("model_%d.onnx", k)))
	}
	var recs []finetune.Recorder
	if j.Progress != nil {
		recs = append(recs, finetune.NewProgress(j.Progress))
	}
	traced, closeFiles, err := traceRecorders("--csv", c.CSV, c.Log, j.resumed)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, closeFiles()) }()
	recs = append(recs, traced...)
	recs = append(recs, extra...)
	trace := &memberTraces{}
	recs = append(recs, trace)
	var res *finetune.Result
	if c.Resume != "" {
		res, err = finetune.ResumeMulti(ctx, c.Resume, j.probs, j.train, j.val, j.s, finetune.Multi(recs...))
	} else {
		res, err = finetune.RunMulti(ctx, j.probs, j.train, j.val, j.s, finetune.Multi(recs...))
	}
	if err != nil {
		return nil, explainNegative(err, j.btasks)
	}

	members, err := j.scoreAll(res)
	if err != nil {
		return nil, err
	}
	out = j.report(res, members, j.ref, j.reference, j.refName, j.label)
	j.explainMembers(out, trace.models)
	for _, net := range j.nets { // the steps are over: their pooled buffers make room for saving
		net.ReleaseBuffers()
	}
	var saveErrs []error
	for k, net := range j.nets {
		record := map[string]any{"version": Version, "command": "front", "criterion": out.Criterion,
			"model": k, "models": N, "steps": res.Steps, "tasks": TaskSpecs(j.btasks), "source": j.source}
		if len(j.terms) > 0 {
			record["terms"] = j.terms
		}
		meta, _ := json.Marshal(record)
		save := func(path string) error {
			return importer.Save(path, j.models[k], net.Weights(), importer.SaveOptions{
				Producer: map[string]string{"paretonav": string(meta)}, Force: c.Force && path == modelFiles[k]})
		}
		if err := save(modelFiles[k]); err != nil {
			// The trained models are never lost: each one that cannot be
			// written goes beside its path, or elsewhere (keepModel).
			werr := fmt.Errorf("--out-dir: model %d: %w", k, err)
			if kept, kerr := keepModel(modelFiles[k], j.s.CheckpointPath, save); kerr != nil {
				werr = fmt.Errorf("%w; it could not be kept anywhere either (%v)", werr, kerr)
			} else {
				werr = fmt.Errorf("%w; model %d is kept in %s", werr, k, kept)
				out.Models[k].File = kept
			}
			saveErrs = append(saveErrs, werr)
			continue
		}
		out.Models[k].File = modelFiles[k]
	}
	if len(saveErrs) > 0 {
		return out, errors.Join(saveErrs...)
	}
	if err := j.finishCheckpoint(out, res); err != nil {
		out.Warnings = append(out.Warnings, err.Error())
	}
	if err := writeFrontCSV(files["csv"], j.tasks, members); err != nil {
		return nil, err
	}
	if j.Plot != nil {
		var trueFront [][2]float64
		if j.synth != nil {
			trueFront = j.synth.Front(200)
		}
		var starts [][]float64
		for _, m := range out.Models {
			if s := lossVector(m.Initial, j.tasks); s != nil {
				starts = append(starts, s)
			}
		}
		if err := j.Plot(files["plot"], fmt.Sprintf("%s: %d models, %s", filepath.Base(j.source), N, out.Criterion), j.tasks, front.LossPoints(members), starts, trueFront); err != nil {
			return nil, err
		}
	}
	out.Files = files
	rb, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := WriteFile(files["report"], append(rb, '\n')); err != nil {
		return nil, fmt.Errorf("--out-dir: %w", err)
	}
	return out, nil
}

// epo replaces the multi-point PNG of a front job by EPO with one
// preference ray per model when the configuration asks for it.
func (j *Front) epo(N int) error {
	switch j.cfg.Method {
	case "", "png":
		if j.cfg.Preference != "" {
			return errors.New("--preference: only with --method epo")
		}
		j.s.Meta["method"] = "png"
		j.label = j.cfg.Criterion
		return nil
	case "epo":
	default:
		return fmt.Errorf("--method %q: front trains with png or epo", j.cfg.Method)
	}
	prefs, err := ParsePreferences("--preference", j.cfg.Preference, N, j.tasks)
	if err != nil {
		return err
	}
	per := make(png.PerPoint, N)
	for k, r := range prefs {
		per[k] = png.EPO{Preference: r}
	}
	j.s.Method = per
	j.s.Meta["method"] = "epo"
	strs := make([]string, N)
	for k, r := range prefs {
		parts := make([]string, len(r))
		for i, v := range r {
			parts[i] = strconv.FormatFloat(v, 'g', 4, 64)
		}
		strs[k] = strings.Join(parts, ",")
	}
	j.label = "epo " + strings.Join(strs, ";")
	j.s.Meta["preferences"] = prefs
	return nil
}

// destinations checks what the front job writes against what it reads
// (Destinations), before the first step; --out-dir is created when
// missing.
func (j *Front) destinations() error {
	c := j.cfg
	ckpt := j.s.CheckpointPath
	if c.Resume == "" {
		if err := freshCheckpoint("front", ckpt, c.Force); err != nil {
			return err
		}
		_, err := os.Stat(ckpt)
		j.staleCheckpoint = err == nil
	}
	if !c.MakeFolders {
		if err := os.MkdirAll(c.OutDir, 0o755); err != nil {
			return fmt.Errorf("--out-dir: %w", err)
		}
	}
	d := &Destinations{Force: c.Force, MakeFolders: c.MakeFolders}
	for _, a := range c.Args {
		d.Input("model", a)
	}
	for _, p := range initPaths(c.Init) {
		d.Input("--init model", p)
	}
	d.Sources("--data", c.Data)
	d.Sources("--val", c.Val)
	d.Input("--reference file", c.Reference)
	d.Input("--config file", c.ConfigFile)
	resumed := c.Resume != ""
	if same, _ := SamePath(c.Resume, ckpt); resumed && !same {
		d.Input("--resume checkpoint", c.Resume)
	}
	for k := range j.nets {
		d.Output("--out-dir", filepath.Join(c.OutDir, fmt.Sprintf("model_%d.onnx", k)))
	}
	for _, f := range []string{"front.csv", "front.png", "report.json"} {
		d.Output("--out-dir", filepath.Join(c.OutDir, f))
	}
	for _, o := range []struct{ flag, path string }{{"--log", c.Log}, {"--csv", c.CSV}} {
		if resumed {
			d.Own(o.flag, o.path)
		} else {
			d.Output(o.flag, o.path)
		}
	}
	d.Own("--checkpoint", ckpt)
	return d.Check()
}

// initPaths splits --init's list of models.
func initPaths(init string) []string {
	if init == "" {
		return nil
	}
	var out []string
	for _, p := range strings.Split(init, ",") {
		out = append(out, strings.TrimSpace(p))
	}
	return out
}

// finishCheckpoint removes the run's checkpoint once the models are
// written, unless KeepCheckpoint, and says so in out.
func (j *Front) finishCheckpoint(out *FrontOutcome, res *finetune.Result) error {
	var err error
	out.Checkpoint, out.CheckpointRemoved, err = finishCheckpoint(j.s.CheckpointPath, res.Checkpoint != "", j.cfg.Resume, j.staleCheckpoint, j.cfg.KeepCheckpoint)
	return err
}

// withDefaults returns c with the defaults Prepare takes filled in
// (defaulted) and its paths absolute: the configuration a checkpoint
// stores.
func (c *FrontConfig) withDefaults() *FrontConfig {
	r := c.defaulted()
	if r.Checkpoint == "" && r.OutDir != "" {
		r.Checkpoint = filepath.Join(r.OutDir, "front.ckpt")
	}
	flagFields(reflect.ValueOf(r).Elem(), func(_, opts string, v reflect.Value) { normalizeField(opts, v) })
	return r
}

// defaulted returns a copy of c with every default that depends on the
// kind of problem (ONNX models or a synthetic problem) filled in: the
// optimizer, learning rate, momentum, γ, spread and steps. It is the one
// place these defaults are taken; Prepare and the checkpoint read them
// from here.
func (c *FrontConfig) defaulted() *FrontConfig {
	r := *c
	synth := r.Problem != ""
	if r.Optimizer == "" {
		r.Optimizer = "adam"
		if synth {
			r.Optimizer = "sgd"
		}
	}
	pick := func(v *float64, onnx, syn float64) *float64 {
		if v != nil {
			return v
		}
		if synth {
			return &syn
		}
		return &onnx
	}
	r.LR = pick(r.LR, DefaultLR(r.Optimizer), SynthLR)
	r.Momentum = pick(r.Momentum, DefaultMomentum(r.Optimizer), 0)
	r.Gamma = pick(r.Gamma, png.DefaultGamma, SynthGamma)
	r.Spread = pick(r.Spread, FrontSpread, SynthSpread)
	if r.Steps == 0 && r.Epochs == 0 {
		r.Steps = FrontSteps
		if synth {
			r.Steps = SynthSteps
		}
	}
	return &r
}

// checkpointRecord is what c's checkpoints store (runRecord), with the
// fingerprints of its inputs.
func (c *FrontConfig) checkpointRecord() ([]byte, error) {
	saved := c.withDefaults()
	saved.Resume = ""
	saved.Force = false
	ckptDir := saved.OutDir // front.ckpt's folder unless --checkpoint
	if saved.Checkpoint != "" {
		ckptDir = filepath.Dir(saved.Checkpoint)
	}
	relOutputs(saved, ckptDir)
	cfg, err := json.Marshal(saved)
	if err != nil {
		return nil, err
	}
	sums, err := sumAll(nil, "MODEL", saved.Args...)
	if err == nil {
		sums, err = sumAll(sums, "--init", initPaths(saved.Init)...)
	}
	for _, src := range []struct {
		flag  string
		specs []string
	}{{"--data", saved.Data}, {"--val", saved.Val}} {
		if err == nil {
			sums, err = sumSources(sums, src.flag, src.specs)
		}
	}
	if err == nil && saved.Reference != "" {
		sums, err = sumAll(sums, "--reference", saved.Reference)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(runRecord{Command: "front", Config: cfg, Inputs: sums})
}

// FrontPlotFunc draws a front's models in loss space to path (front.png):
// pts are the models' losses in task order, starts the losses each model
// started from (the given model, or a synthetic problem's starting
// points), trueFront a synthetic problem's front (else nil).
type FrontPlotFunc func(path, title string, tasks []string, pts, starts [][]float64, trueFront [][2]float64) error

// lossVector returns the losses of m in task order, or nil when one is
// missing.
func lossVector(m map[string]Num, tasks []string) []float64 {
	v := make([]float64, len(tasks))
	for i, t := range tasks {
		x, ok := m[t]
		if !ok {
			return nil
		}
		v[i] = float64(x)
	}
	return v
}

// memberTraces keeps what explain reads of every step, one trace a model.
type memberTraces struct{ models []stepTrace }

func (t *memberTraces) Init(*finetune.Config) error { return nil }

func (t *memberTraces) Record(st *finetune.Step) error {
	if len(t.models) < len(st.Points) {
		t.models = make([]stepTrace, len(st.Points))
	}
	for k, p := range st.Points {
		t.models[k].record(p)
	}
	return nil
}

func (t *memberTraces) Done(*finetune.Result) error { return nil }

// explainMembers gives each model of out its run's explanation from its
// steps: the band share, the control's steps and reasons and the steps
// Adam's step bound held (PNG; EPO's runs have the bound's part only).
// F's change is not among them: a member's losses before (its first
// batch's) and after (the scoring data's) are measured on different
// data.
func (j *Front) explainMembers(out *FrontOutcome, traces []stepTrace) {
	in := explainInput{Method: "png", Tasks: j.tasks, Resumed: max(0, j.resumed)}
	if p, ok := j.s.Method.(png.PNG); ok {
		in.Gamma, in.MaxTradeoff = p.Settings.Gamma, p.Settings.MaxTradeoff
		if in.Gamma == 0 {
			in.Gamma = png.DefaultGamma
		}
	} else {
		in.Method = "epo"
	}
	for k := range out.Models {
		if k >= len(traces) || len(traces[k].G) == 0 {
			continue
		}
		in.Trace = traces[k]
		out.Models[k].Explanation = explain(in)
	}
}
