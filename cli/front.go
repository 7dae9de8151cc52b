package cli

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"
	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/finetune/front"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/models/synthetic"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// Defaults of front for ONNX models: the paper's MultiMNIST setting (Adam,
// lr 1e-3, batch 256, γ 0.1). --spread perturbs every parameter of the one
// starting model by N(0, spread²) so that the N models start apart.
// Synthetic problems (--problem) use synth's defaults instead (plain
// steps, lr 0.005, 10000 steps, γ 0.01, spread 0.1).
const (
	frontBatch  = 256
	frontSteps  = 1000
	frontSpread = 0.01
	frontModels = 5
	// frontReportMax caps the training examples scored when no --val is
	// given.
	frontReportMax = 2048
	// frontSynthRef is the default hypervolume reference with --problem:
	// the synthetic fronts reach losses of 1, beyond 0.6.
	frontSynthRef = 1.1
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
distance to the true front and the spacing of the models along it.`,
	Flags: []ucli.Flag{
		&ucli.StringFlag{Name: "problem", Usage: "train a synthetic problem (" + strings.Join(synthetic.Names, " or ") + ") instead of an ONNX model", Category: "Problem"},
		dataFlag,
		&ucli.StringSliceFlag{Name: "val", Usage: "data the models are scored on (default: --data), from `SOURCE`: FILE.npz, " + sourceUsage,
			Category: "Data", TakesFile: true},
		taskFlag, mapFlag, bnFlag, freezeFlag,
		&ucli.IntFlag{Name: "models", Value: frontModels, Usage: "number `N` of models trained together", Category: "Problem"},
		&ucli.StringFlag{Name: "init", Usage: "start model k from the k-th file of `A.onnx,B.onnx,...` (one per model) instead of from perturbed copies of MODEL", Category: "Problem"},
		&ucli.Float64Flag{Name: "spread", Usage: "standard deviation of the seeded noise added to every parameter of every copy",
			DefaultText: "0.01; 0.1 with --problem", Category: "Problem"},
		&ucli.StringFlag{Name: "criterion", Value: "energy", Usage: "the multi-point criterion that spreads the models; `SPEC` is energy or energy:eps=E", Category: "Method"},
		alphaFlag,
		&ucli.Float64Flag{Name: "gamma", Usage: "PNG's γ: the control is on while g > γ·ē", DefaultText: "0.1; 0.01 with --problem", Category: "Method"},
		&ucli.StringFlag{Name: "optimizer", Usage: "the optimizer by `NAME`: sgd or adam", DefaultText: "adam; sgd with --problem", Category: "Training"},
		&ucli.Float64Flag{Name: "lr", Usage: "learning rate", DefaultText: "0.001; 0.005 with --problem", Category: "Training"},
		lrScheduleFlag,
		&ucli.IntFlag{Name: "steps", Usage: "number of steps; 0 runs --epochs passes over --data instead",
			DefaultText: "1000; 10000 with --problem; --epochs passes when that is set", Category: "Training"},
		epochsFlag,
		batchFlag(frontBatch),
		&ucli.IntFlag{Name: "workers", Value: 1, Usage: "models evaluated at once (each on its own goroutine)", Category: "Training"},
		seedFlag,
		&ucli.PathFlag{Name: "out-dir", Usage: "write the models, front.csv, front.png and report.json to `DIR`", Category: "Output"},
		&ucli.StringFlag{Name: "ref", Usage: "hypervolume reference point on the losses, one value for all tasks or one per task as `R1,R2,...`; only models below it in every task count",
			DefaultText: "0.6, the paper's for trained MultiMNIST models; 1.1 with --problem", Category: "Output"},
		&ucli.PathFlag{Name: "reference", Usage: "measure IGD+ of the models' losses against the reference front in `FILE.csv` (one point per row, a loss per task; a header names the columns loss_TASK as in front.csv, or the tasks in order)",
			Category: "Output", TakesFile: true},
		&ucli.BoolFlag{Name: "force", Usage: "overwrite existing files in --out-dir", Category: "Output"},
		logFlag,
		csvFlag,
		checkpointEveryFlag,
		&ucli.PathFlag{Name: "checkpoint", Usage: "write checkpoints to `FILE` (default OUT_DIR/front.ckpt), also on interruption", Category: "Output"},
		&ucli.PathFlag{Name: "resume", Usage: "continue the run saved in `CKPT` (same models, data and settings)", Category: "Training"},
		jsonFlag,
	},
	Action: runFront,
}))

func init() { register(frontCommand) }

// frontJob is a resolved front run: N problems and how to score them.
type frontJob struct {
	tasks    []string
	btasks   []backend.Task     // ONNX only
	nets     []*backend.Model   // ONNX only
	models   []*importer.Model  // ONNX only: the file each net saves into
	probs    []finetune.Problem // what the loop trains
	synth    *synthetic.Problem // synthetic only: for the true front
	train    *finetune.Dataset
	val      *finetune.Dataset
	score    *finetune.Dataset
	scoredOn string
	batch    int
	s        *finetune.Settings
	source   string
}

// frontModelOut is one model in front's report.
type frontModelOut struct {
	Model     int             `json:"model"`
	File      string          `json:"file,omitempty"`
	Losses    map[string]jnum `json:"losses"`
	Accuracy  map[string]jnum `json:"accuracy,omitempty"`
	G         jnum            `json:"g"`
	FrontDist *jnum           `json:"front_distance,omitempty"`
	Initial   map[string]jnum `json:"initial_losses"`
}

// frontQualityOut is a front.Quality in JSON. IGD+ is reported only
// against a reference front (--reference, or the true front of a synthetic
// problem): against the models' own non-dominated set it is 0 by
// construction and says nothing.
type frontQualityOut struct {
	HV  jnum   `json:"hv"`
	Ref []jnum `json:"ref"`
	// HVNote explains an HV of 0: no model is below Ref in every task.
	HVNote       string `json:"hv_note,omitempty"`
	NonDominated int    `json:"non_dominated"`
	IGDPlus      *jnum  `json:"igd_plus,omitempty"`
	// Reference names the front IGDPlus is measured against.
	Reference string `json:"igd_plus_reference,omitempty"`
}

// frontOut is front's report (report.json and --json).
type frontOut struct {
	Source    string            `json:"source"`
	Tasks     []string          `json:"tasks"`
	Criterion string            `json:"criterion"`
	Status    string            `json:"status"`
	Steps     int               `json:"steps"`
	ScoredOn  string            `json:"scored_on"`
	Examples  int               `json:"examples,omitempty"`
	Models    []frontModelOut   `json:"models"`
	Loss      frontQualityOut   `json:"loss_quality"`
	Accuracy  *frontQualityOut  `json:"accuracy_quality,omitempty"`
	Gaps      []jnum            `json:"neighbour_gaps,omitempty"`
	Files     map[string]string `json:"files"`
}

func runFront(c *ucli.Context) (err error) {
	dir := c.Path("out-dir")
	if dir == "" {
		return errors.New("--out-dir: required (the folder for the models, front.csv, front.png and report.json)")
	}
	N := c.Int("models")
	if N < 2 {
		return fmt.Errorf("--models %d: want at least 2 (a front needs several models)", N)
	}
	job, err := frontJobFromFlags(c, N)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out-dir: %w", err)
	}
	files := map[string]string{"csv": filepath.Join(dir, "front.csv"), "plot": filepath.Join(dir, "front.png"), "report": filepath.Join(dir, "report.json")}
	var modelFiles []string
	for k := range job.nets {
		modelFiles = append(modelFiles, filepath.Join(dir, fmt.Sprintf("model_%d.onnx", k)))
	}
	if !c.Bool("force") {
		for _, p := range append(append([]string(nil), modelFiles...), files["csv"], files["plot"], files["report"]) {
			if _, err := os.Stat(p); err == nil {
				return fmt.Errorf("--out-dir %s: %s exists (use --force to overwrite)", dir, filepath.Base(p))
			}
		}
	}
	if job.s.CheckpointPath == "" {
		job.s.CheckpointPath = filepath.Join(dir, "front.ckpt")
	}
	// The quality measures' flags are read before training so that a
	// mistake in them costs no run.
	ref, err := frontRef(c, len(job.tasks))
	if err != nil {
		return err
	}
	reference, refName, err := job.referenceFront(c.Path("reference"))
	if err != nil {
		return err
	}

	recs := []finetune.Recorder{finetune.NewProgress(c.App.ErrWriter)}
	traced, closeFiles, err := traceRecorders("--"+csvFlag.Name, c.Path(csvFlag.Name), c.Path(logFlag.Name))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeFiles()) }()
	recs = append(recs, traced...)
	ctx, stop := signalContext(c)
	defer stop()
	var res *finetune.Result
	if rp := c.Path("resume"); rp != "" {
		res, err = finetune.ResumeMulti(ctx, rp, job.probs, job.train, job.val, job.s, finetune.Multi(recs...))
	} else {
		res, err = finetune.RunMulti(ctx, job.probs, job.train, job.val, job.s, finetune.Multi(recs...))
	}
	if err != nil {
		var ie *finetune.InterruptedError
		if errors.As(err, &ie) && ie.Checkpoint != "" {
			fmt.Fprintf(c.App.ErrWriter, "interrupted after step %d; continue with --resume %s\n", ie.Step, ie.Checkpoint)
		}
		return err
	}

	members, err := job.scoreAll(res)
	if err != nil {
		return err
	}
	out := job.report(res, members, ref, reference, refName, c.String("criterion"))
	for k, net := range job.nets {
		meta, _ := json.Marshal(map[string]any{"version": Version, "command": "front", "criterion": out.Criterion,
			"model": k, "models": N, "steps": res.Steps, "tasks": taskSpecs(job.btasks), "source": job.source})
		if err := importer.Save(modelFiles[k], job.models[k], net.Weights(), importer.SaveOptions{
			Producer: map[string]string{"paretonav": string(meta)}, Force: c.Bool("force")}); err != nil {
			return fmt.Errorf("--out-dir: model %d: %w", k, err)
		}
		out.Models[k].File = modelFiles[k]
	}
	if err := writeFrontCSV(files["csv"], job.tasks, members); err != nil {
		return err
	}
	var trueFront [][2]float64
	if job.synth != nil {
		trueFront = job.synth.Front(200)
	}
	if err := plotFront(files["plot"], fmt.Sprintf("%s: %d models, %s", filepath.Base(job.source), N, out.Criterion), job.tasks, front.LossPoints(members), trueFront); err != nil {
		return err
	}
	out.Files = files
	rb, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(files["report"], append(rb, '\n')); err != nil {
		return fmt.Errorf("--out-dir: %w", err)
	}
	if c.Bool(jsonFlag.Name) {
		return writeJSON(c.App.Writer, out)
	}
	return frontSummary(c.App.Writer, out)
}

// frontJobFromFlags resolves the flags into N problems, data and settings.
func frontJobFromFlags(c *ucli.Context, N int) (*frontJob, error) {
	job := &frontJob{batch: c.Int("batch")}
	if job.batch < 1 {
		return nil, fmt.Errorf("--batch %d: want at least 1", job.batch)
	}
	for _, f := range []string{"steps", "epochs", "checkpoint-every", "workers"} {
		if c.Int(f) < 0 {
			return nil, fmt.Errorf("--%s %d: want ≥ 0", f, c.Int(f))
		}
	}
	synth := c.String("problem") != ""
	def := func(flag string, onnx, syn float64) float64 {
		if c.IsSet(flag) {
			return c.Float64(flag)
		}
		if synth {
			return syn
		}
		return onnx
	}
	steps := c.Int("steps")
	if steps == 0 && c.Int("epochs") == 0 {
		steps = frontSteps
		if synth {
			steps = synthSteps
		}
	}
	optName := c.String("optimizer")
	if optName == "" {
		optName = "adam"
		if synth {
			optName = "sgd"
		}
	}
	spread := def("spread", frontSpread, synthSpread)
	job.s = &finetune.Settings{
		Method:    png.PNG{Settings: png.Settings{Alpha: c.Float64(alphaFlag.Name), Gamma: def("gamma", png.DefaultGamma, synthGamma)}},
		Optimizer: optName, LR: def("lr", tuneLR, synthLR), LRSchedule: c.String("lr-schedule"),
		Steps: steps, Epochs: c.Int("epochs"), BatchSize: job.batch, Seed: c.Int64(seedFlag.Name),
		CheckpointEvery: c.Int("checkpoint-every"), CheckpointPath: c.Path("checkpoint"), Workers: c.Int("workers"),
		Meta: map[string]any{"command": "front", "models": N},
	}
	var err error
	if synth {
		err = job.synthetic(c, N, spread)
	} else {
		err = job.onnx(c, N, spread)
	}
	if err != nil {
		return nil, err
	}
	spec := c.String("criterion")
	if !strings.HasPrefix(strings.TrimSpace(spec), "energy") {
		return nil, fmt.Errorf("--criterion %q: front trains with a multi-point criterion: energy[:eps=E]", spec)
	}
	if job.s.Multi, err = criterion.ParseMulti(spec, job.tasks); err != nil {
		return nil, fmt.Errorf("--criterion: %w", err)
	}
	job.s.Meta["criterion"] = spec
	job.s.Meta["source"] = job.source
	return job, nil
}

// synthetic prepares N copies of a synthetic problem around the paper's
// initial point.
func (j *frontJob) synthetic(c *ucli.Context, N int, spread float64) error {
	if positional(c) != nil || len(c.StringSlice(dataFlag.Name)) > 0 || c.String("init") != "" {
		return errors.New("--problem: takes no MODEL.onnx, --data or --init")
	}
	name := c.String("problem")
	for k := 0; k < N; k++ {
		p, err := synthetic.New(name)
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
	if err := front.Perturb(j.probs, spread, c.Int64(seedFlag.Name)); err != nil {
		return fmt.Errorf("--spread: %w", err)
	}
	j.tasks, j.source, j.scoredOn = j.probs[0].Tasks(), name, "exact losses"
	return nil
}

// onnx opens N backend models, from MODEL.onnx (perturbed) or --init, and
// loads the data.
func (j *frontJob) onnx(c *ucli.Context, N int, spread float64) error {
	args := positional(c)
	inits := c.String("init")
	var paths []string
	switch {
	case inits != "":
		for _, p := range strings.Split(inits, ",") {
			paths = append(paths, strings.TrimSpace(p))
		}
		if len(paths) != N {
			return fmt.Errorf("--init %q: %d models, want --models %d", inits, len(paths), N)
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
	sources, err := dataSources(c, dataFlag.Name, "the training data")
	if err != nil {
		return err
	}
	dataPath := strings.Join(sources, ",")
	if j.btasks, err = parseTasks(c); err != nil {
		return err
	}
	maps, err := parseMaps(c)
	if err != nil {
		return err
	}
	opt, err := modelOptions(c)
	if err != nil {
		return err
	}
	for k, p := range paths {
		m, err := importer.Load(p)
		if err != nil {
			return fmt.Errorf("model %d: %w", k, err)
		}
		// Each model gets its own copy of the graph: backend models on
		// different goroutines (--workers) must share no tensors.
		own := &importer.Model{Proto: proto.Clone(m.Proto).(*onnxpb.ModelProto), Path: m.Path, Dir: m.Dir}
		net, err := backend.Open(own, j.btasks, opt)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if net.NumParams() == 0 {
			return fmt.Errorf("%s: nothing to train (no trainable initializer; check --freeze)", p)
		}
		j.models, j.nets, j.probs = append(j.models, m), append(j.nets, net), append(j.probs, net)
	}
	if inits == "" {
		if err := front.Perturb(j.probs, spread, c.Int64(seedFlag.Name)); err != nil {
			return fmt.Errorf("--spread: %w", err)
		}
	}
	j.tasks = j.nets[0].Tasks()
	bind := dataBinding{md: j.nets[0], tasks: j.btasks, maps: maps}
	if err := bind.check(); err != nil {
		return err
	}
	if j.train, err = bind.load("--data", sources, 0, j.batch); err != nil {
		return err
	}
	j.score, j.scoredOn = j.train, "training data "+dataPath
	if vs := c.StringSlice("val"); len(vs) > 0 {
		if j.val, err = bind.load("--val", vs, 0, j.batch); err != nil {
			return err
		}
		j.score, j.scoredOn = j.val, "validation data "+strings.Join(vs, ",")
	} else if j.train.Len() > frontReportMax {
		j.score = &finetune.Dataset{Arrays: j.train.Slice(0, frontReportMax)}
		j.scoredOn = fmt.Sprintf("first %d examples of training data %s", frontReportMax, dataPath)
	}
	j.s.Meta["data"] = dataPath
	return nil
}

// scoreAll measures every trained model: exact losses for synthetic
// problems, losses and accuracies on the scoring data for ONNX models.
func (j *frontJob) scoreAll(res *finetune.Result) ([]front.Member, error) {
	out := make([]front.Member, len(j.probs))
	for k, p := range j.probs {
		if err := p.SetParams(res.Points[k].Params); err != nil {
			return nil, err
		}
		if j.nets == nil {
			l := make([]float64, len(j.tasks))
			if err := p.Evaluate(nil, l, nil); err != nil {
				return nil, fmt.Errorf("model %d: %w", k, err)
			}
			out[k] = front.Member{Losses: l, Acc: nanSlice(len(l))}
			continue
		}
		l, a, err := front.Score(j.nets[k], j.btasks, j.score, j.batch)
		if err != nil {
			return nil, fmt.Errorf("model %d on the %s: %w", k, j.scoredOn, err)
		}
		out[k] = front.Member{Losses: l, Acc: a}
	}
	return out, nil
}

func nanSlice(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// frontRef reads --ref: one value for every task or one per task.
func frontRef(c *ucli.Context, m int) ([]float64, error) {
	s := c.String("ref")
	if s == "" && c.String("problem") != "" {
		return front.Uniform(m, frontSynthRef), nil
	}
	if s == "" {
		return front.Uniform(m, front.DefaultLossRef), nil
	}
	v, err := parseFloats("--ref", s)
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

// referenceFront returns the loss-space front IGD+ is measured against
// and its name: the points of path (--reference) when given, else the
// true front of a synthetic problem, else none.
func (j *frontJob) referenceFront(path string) ([][]float64, string, error) {
	if path != "" {
		pts, err := readReferenceFront(path, j.tasks)
		if err != nil {
			return nil, "", fmt.Errorf("--reference: %w", err)
		}
		return pts, fmt.Sprintf("%s (%d points)", path, len(pts)), nil
	}
	if j.synth == nil {
		return nil, "", nil
	}
	tf := j.synth.Front(200)
	pts := make([][]float64, len(tf))
	for i, p := range tf {
		pts[i] = []float64{p[0], p[1]}
	}
	return pts, fmt.Sprintf("the true front of %s (%d points)", j.source, len(pts)), nil
}

// readReferenceFront reads a CSV file of loss vectors, one point per row.
// A first row that is not all numbers is a header: the columns named
// loss_TASK (as in front.csv) or TASK are read, for every task; without a
// header every row has one loss per task, in task order.
func readReferenceFront(path string, tasks []string) ([][]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cols := make([]int, len(tasks))
	for i := range cols {
		cols[i] = i
	}
	if len(rows) > 0 && !allNumbers(rows[0]) {
		head := rows[0]
		rows = rows[1:]
		for i, t := range tasks {
			cols[i] = slices.IndexFunc(head, func(h string) bool {
				h = strings.TrimSpace(h)
				return h == "loss_"+t || h == t
			})
			if cols[i] < 0 {
				return nil, fmt.Errorf("%s: header %q has no column loss_%s or %s", path, strings.Join(head, ","), t, t)
			}
		}
	} else if len(rows) > 0 && len(rows[0]) != len(tasks) {
		return nil, fmt.Errorf("%s: %d columns and no header, want one loss per task (%s)", path, len(rows[0]), strings.Join(tasks, ", "))
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no points", path)
	}
	pts := make([][]float64, len(rows))
	for r, row := range rows {
		pts[r] = make([]float64, len(tasks))
		for i, c := range cols {
			if c >= len(row) {
				return nil, fmt.Errorf("%s: row %d has %d columns, want at least %d", path, r+1, len(row), c+1)
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(row[c]), 64)
			if err != nil || math.IsNaN(v) {
				return nil, fmt.Errorf("%s: row %d, column %d: %q is not a loss", path, r+1, c+1, row[c])
			}
			pts[r][i] = v
		}
	}
	return pts, nil
}

// allNumbers reports whether every field of row parses as a number.
func allNumbers(row []string) bool {
	for _, s := range row {
		if _, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			return false
		}
	}
	return true
}

// report assembles front's report from the run and the scores; IGD+ of
// the losses is measured against reference (named refName) when given.
func (j *frontJob) report(res *finetune.Result, ms []front.Member, ref []float64, reference [][]float64, refName, crit string) *frontOut {
	out := &frontOut{Source: j.source, Tasks: j.tasks, Criterion: crit, Status: res.Status.String(), Steps: res.Steps, ScoredOn: j.scoredOn}
	if j.score != nil {
		out.Examples = j.score.Len()
	}
	named := func(v []float64) map[string]jnum {
		o := map[string]jnum{}
		for i, t := range j.tasks {
			o[t] = jnum(v[i])
		}
		return o
	}
	for k, m := range ms {
		mo := frontModelOut{Model: k, Losses: named(m.Losses), G: jnum(res.Points[k].G), Initial: named(res.Points[k].InitialLosses)}
		if j.nets != nil {
			mo.Accuracy = named(m.Acc)
		}
		if j.synth != nil {
			d := jnum(j.synth.FrontDistance([2]float64{m.Losses[0], m.Losses[1]}))
			mo.FrontDist = &d
		}
		out.Models = append(out.Models, mo)
	}
	lp := front.LossPoints(ms)
	out.Loss = qualityOut(front.Measure(lp, ref, reference))
	if reference != nil {
		out.Loss.Reference = refName
	} else {
		out.Loss.IGDPlus = nil
	}
	if !anyBelow(lp, ref) {
		out.Loss.HVNote = fmt.Sprintf("no model's losses are below the reference point (%s) in every task; HV is 0 — pass --ref above the losses (the largest is %#.4g)",
			joinFloats(ref), maxOf(lp))
	}
	if ap := front.AccPoints(ms); ap != nil && j.nets != nil {
		aq := qualityOut(front.Measure(ap, front.Uniform(len(j.tasks), 0), nil))
		for i := range aq.Ref {
			aq.Ref[i] = 0
		}
		aq.IGDPlus = nil // against the models' own set: 0 by construction
		out.Accuracy = &aq
	}
	if len(j.tasks) == 2 {
		out.Gaps = jnums(front.Gaps(front.LossPoints(ms)))
	}
	return out
}

func qualityOut(q front.Quality) frontQualityOut {
	igd := jnum(q.IGDPlus)
	return frontQualityOut{HV: jnum(q.HV), Ref: jnums(q.Ref), IGDPlus: &igd, NonDominated: q.NonDominated}
}

// anyBelow reports whether some point is below ref in every coordinate,
// so that it adds to the hypervolume.
func anyBelow(points [][]float64, ref []float64) bool {
	for _, p := range points {
		below := true
		for i, v := range p {
			below = below && v < ref[i]
		}
		if below {
			return true
		}
	}
	return false
}

// maxOf returns the largest coordinate of any point.
func maxOf(points [][]float64) float64 {
	m := math.Inf(-1)
	for _, p := range points {
		for _, v := range p {
			m = math.Max(m, v)
		}
	}
	return m
}

// joinFloats writes v as "a, b, ..." (%g: as the user wrote them).
func joinFloats[T ~float64](v []T) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%g", float64(x))
	}
	return strings.Join(parts, ", ")
}

// writeFrontCSV writes one row per model: model, the task losses, the
// task accuracies (empty where a task has none).
func writeFrontCSV(path string, tasks []string, ms []front.Member) error {
	var sb strings.Builder
	sb.WriteString("model")
	for _, t := range tasks {
		sb.WriteString(",loss_" + t)
	}
	for _, t := range tasks {
		sb.WriteString(",acc_" + t)
	}
	sb.WriteString("\n")
	for k, m := range ms {
		fmt.Fprintf(&sb, "%d", k)
		for _, v := range m.Losses {
			fmt.Fprintf(&sb, ",%.9g", v)
		}
		for _, v := range m.Acc {
			if math.IsNaN(v) {
				sb.WriteString(",")
			} else {
				fmt.Fprintf(&sb, ",%.6f", v)
			}
		}
		sb.WriteString("\n")
	}
	if err := writeFileAtomic(path, []byte(sb.String())); err != nil {
		return fmt.Errorf("--out-dir: %w", err)
	}
	return nil
}

// writeFileAtomic writes b to a temporary file beside path and renames it
// over path.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

func frontSummary(w io.Writer, r *frontOut) error {
	fmt.Fprintf(w, "%s: %d models, criterion %s: %s after %d steps\n", r.Source, len(r.Models), r.Criterion, r.Status, r.Steps)
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
	}
	fmt.Fprintf(w, "  losses: %d of %d models non-dominated; ", r.Loss.NonDominated, len(r.Models))
	if r.Loss.HVNote != "" {
		fmt.Fprintf(w, "%s\n", r.Loss.HVNote)
	} else {
		fmt.Fprintf(w, "HV %#.4g (ref %s)\n", float64(r.Loss.HV), joinFloats(r.Loss.Ref))
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
	fmt.Fprintf(w, "wrote %s\n", filepath.Dir(r.Files["report"]))
	return nil
}
