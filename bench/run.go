package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/finetune/front"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/models"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
	"github.com/paretonav/paretonav/png/pareto"
)

// LinearWeights are the first task's weights of the 5 linear
// scalarization runs (the second task gets 1 − w).
var LinearWeights = []float64{0.1, 0.3, 0.5, 0.7, 0.9}

// Tasks are LeNet2's two classification tasks on the composed datasets.
var Tasks = []string{"left:nll:logp_left:left", "right:nll:logp_right:right"}

// Metrics measured per (dataset, seed, method), in table order.
var Metrics = []string{"hv_loss", "igd_loss", "hv_acc", "igd_acc"}

// LossRef and AccRef are the hypervolume reference points, the same for
// every task: losses below LossRef (the paper's (0.6, 0.6)) and accuracies
// above AccRef. The paper computes the accuracy hypervolume "by flipping
// the sign" of the loss one, that is above 0.6: its values (9.27e-2 for
// linear scalarization on MultiMNIST, about (0.905 − 0.6)²) fit no other
// reference.
const (
	LossRef = front.DefaultLossRef
	AccRef  = 0.6
)

// Larger is better for hypervolumes, smaller for IGD+.
var higherBetter = map[string]bool{"hv_loss": true, "hv_acc": true}

// Config configures Run.
type Config struct {
	Budget   Budget
	Datasets []string
	// Data returns the arrays ("x", "left", "right") of a dataset split
	// with n examples for seed; the CLI generates them with
	// models/datasets and caches them as NPZ.
	Data func(dataset, split string, n int, seed int64) (map[string]*importer.Tensor, error)
	// Workers is the number of models trained at once (default 1).
	Workers int
	// Log receives progress lines (nil: none).
	Log io.Writer
	// Ablation names the dataset on which PNG's α/γ ablation runs
	// (AblationVariants beside the main methods, from the same phase-1
	// models); "" for none. The paper runs it on MultiMNIST.
	Ablation string
	// ThresholdCap is PNG's png.Settings.ThresholdCap ρ for png and the
	// ablation variants: the threshold e = γ·min(ē, ρ·ē_W); 0 (the
	// paper's method) for none.
	ThresholdCap float64
	// DataLayout names the layout Data builds the datasets with (the
	// CLI's --layout, models/datasets.Layout), recorded in the results;
	// "" when not told.
	DataLayout string
	// MaxTradeoff is PNG's png.Settings.MaxTradeoff M (0, the paper's
	// method: no trade test; the CLI's default is png.RobustMaxTradeoff).
	MaxTradeoff float64
	// EnergyScale is finetune.Settings.MultiScale for png and the
	// ablation variants ("": finetune.MultiPerModel).
	EnergyScale string
	// PaperUpdate hands PNG's direction to Adam as its gradient, as the
	// paper does (finetune.Settings.DirectionAsGradient), instead of
	// posing PNG's constraint on Adam's update.
	PaperUpdate bool

	// tweak, when set (tests only), edits each phase-2 arm's settings
	// (s.Seed is the seed) before its run: a test forces one arm to
	// diverge with it.
	tweak func(arm string, s *finetune.Settings)
}

// Failure is a phase-2 run (one method or ablation variant on one dataset
// and seed) that failed numerically: a model diverged (finetune's
// *DivergedError) or its loss or gradient stayed non-finite. Its points
// are left out and its metrics are missing (NaN); the other runs go on.
type Failure struct {
	Method string `json:"method"`
	Error  string `json:"error"`
}

// numericalFailure reports whether err is a run's numerical failure
// (divergence or a non-finite loss or gradient) rather than a fault of
// the benchmark (bad data, cancellation), which still aborts it.
func numericalFailure(err error) bool {
	return errors.Is(err, finetune.ErrDiverged) || errors.Is(err, finetune.ErrNonFinite)
}

// Point is one scored checkpoint.
type Point struct {
	Method     string    `json:"method"`
	Model      int       `json:"model"`
	Step       int       `json:"step"`
	Losses     []float64 `json:"losses"`
	Accuracies []float64 `json:"accuracies"`
}

// SeedResult is one (dataset, seed) run: every checkpoint and the metrics
// of each method.
type SeedResult struct {
	Dataset string                        `json:"dataset"`
	Seed    int64                         `json:"seed"`
	Points  []Point                       `json:"points"`
	Metrics map[string]map[string]float64 `json:"metrics"` // method → metric → value
	// Ablation holds the ablation table's metrics (png and each variant,
	// IGD+ against the union of every method and variant), nil without.
	Ablation map[string]map[string]float64 `json:"ablation,omitempty"`
	// Trace is every method's (and variant's) phase-2 dynamics, one entry
	// per checkpoint; nil in results written before it was recorded.
	Trace []Trace `json:"trace,omitempty"`
	// Failures are the phase-2 runs that failed numerically, in arm
	// order; their metrics are NaN in Metrics and Ablation.
	Failures []Failure     `json:"failures,omitempty"`
	Elapsed  time.Duration `json:"elapsed_ns"`
}

// Cell is one method's metric over the seeds.
type Cell struct {
	// Mean and Std are over the seeds with a value (NaN Values, from
	// failed runs, are left out); N is how many there are.
	Mean, Std float64
	N         int
	// Values and Seeds are the per-seed values (NaN for a failed run) and
	// their seeds, in run order.
	Values []float64
	Seeds  []int64
	// VsPNG is the paired t-test of PNG against this method (nil for
	// PNG), over the seeds where both have a value.
	VsPNG *TTest
}

// Results is the outcome of Run.
type Results struct {
	Budget Budget
	Seeds  []SeedResult
	Table  map[string]map[string]map[string]*Cell // dataset → method → metric
	// AblationTable is the ablation's table, dataset → variant name (png
	// and AblationVariants) → metric, each variant's VsPNG the paired
	// t-test of the default png against it; empty without the ablation.
	AblationTable map[string]map[string]map[string]*Cell
	// ThresholdCap is Config.ThresholdCap of the run (0 in results
	// written before it was recorded, which had none).
	ThresholdCap float64
	// DataLayout is Config.DataLayout of the run ("" in results written
	// before it was recorded, whose data had the default layout).
	DataLayout string
	// MaxTradeoff and EnergyScale are Config's (0 and "model" in results
	// written before they were recorded, which had no trade test and
	// scaled each model's energy gradient to unit length).
	MaxTradeoff float64
	EnergyScale string
	// PaperUpdate is Config.PaperUpdate (false in results written before
	// it was recorded, which posed the constraint on Adam's update).
	PaperUpdate bool
	Elapsed     time.Duration
}

// Run trains and measures every method on every dataset and seed (see the
// package documentation for the protocol).
func Run(ctx context.Context, cfg Config) (*Results, error) {
	b := cfg.Budget
	if err := b.Validate(); err != nil {
		return nil, err
	}
	if cfg.Data == nil {
		return nil, errors.New("bench: Config.Data is nil")
	}
	if cfg.Workers < 1 {
		cfg.Workers = 1
	}
	if !(cfg.ThresholdCap >= 0) || math.IsInf(cfg.ThresholdCap, 0) {
		return nil, fmt.Errorf("bench: Config.ThresholdCap = %v, want a finite number ≥ 0 (0: none)", cfg.ThresholdCap)
	}
	if !(cfg.MaxTradeoff >= 0) || math.IsInf(cfg.MaxTradeoff, 0) {
		return nil, fmt.Errorf("bench: Config.MaxTradeoff = %v, want a finite number ≥ 0 (0: none)", cfg.MaxTradeoff)
	}
	if err := finetune.CheckMultiScale(cfg.EnergyScale); err != nil {
		return nil, fmt.Errorf("bench: Config.EnergyScale %w", err)
	}
	if cfg.EnergyScale == "" {
		cfg.EnergyScale = finetune.MultiPerModel
	}
	var tasks []backend.Task
	for _, s := range Tasks {
		t, err := backend.ParseTask(s)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	start := time.Now()
	res := &Results{Budget: b, Table: map[string]map[string]map[string]*Cell{}, ThresholdCap: cfg.ThresholdCap, DataLayout: cfg.DataLayout,
		MaxTradeoff: cfg.MaxTradeoff, EnergyScale: cfg.EnergyScale, PaperUpdate: cfg.PaperUpdate}
	for _, ds := range cfg.Datasets {
		for s := range b.Seeds {
			seed := int64(s + 1)
			sr, err := runSeed(ctx, cfg, tasks, ds, seed)
			if err != nil {
				return nil, fmt.Errorf("bench: %s, seed %d: %w", ds, seed, err)
			}
			res.Seeds = append(res.Seeds, *sr)
			logf(cfg.Log, "%s seed %d done in %s (%s elapsed)", ds, seed, sr.Elapsed.Round(time.Second), time.Since(start).Round(time.Second))
		}
	}
	res.Table = tabulate(res.Seeds, func(sr SeedResult) map[string]map[string]float64 { return sr.Metrics })
	res.AblationTable = tabulate(res.Seeds, func(sr SeedResult) map[string]map[string]float64 { return sr.Ablation })
	res.Elapsed = time.Since(start)
	return res, nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// runSeed runs the protocol on one dataset and seed.
func runSeed(ctx context.Context, cfg Config, tasks []backend.Task, ds string, seed int64) (*SeedResult, error) {
	b := cfg.Budget
	t0 := time.Now()
	trainA, err := cfg.Data(ds, "train", b.TrainExamples, seed)
	if err != nil {
		return nil, err
	}
	testA, err := cfg.Data(ds, "test", b.TestExamples, seed)
	if err != nil {
		return nil, err
	}
	train, err := finetune.NewDataset(trainA)
	if err != nil {
		return nil, fmt.Errorf("training data: %w", err)
	}
	test, err := finetune.NewDataset(testA)
	if err != nil {
		return nil, fmt.Errorf("test data: %w", err)
	}
	proto0 := models.LeNet2(seed)
	newNets := func() ([]*backend.Model, error) {
		nets := make([]*backend.Model, b.Models)
		for k := range nets {
			mp := proto.Clone(proto0).(*onnxpb.ModelProto)
			md, err := backend.Open(&importer.Model{Proto: mp}, tasks, backend.Options{})
			if err != nil {
				return nil, err
			}
			nets[k] = md
		}
		return nets, nil
	}
	settings := func(steps int, m png.Method) *finetune.Settings {
		return &finetune.Settings{Method: m, Optimizer: "adam", LR: 1e-3, Steps: steps, BatchSize: b.Batch,
			Seed: seed, Workers: cfg.Workers}
	}
	names := []string{"left", "right"}
	linear := func(k int) png.Method { return png.Linear{Weights: []float64{LinearWeights[k], 1 - LinearWeights[k]}} }

	// Phase 1: linear scalarization from one initialisation.
	warm, err := newNets()
	if err != nil {
		return nil, err
	}
	logf(cfg.Log, "%s seed %d: phase 1, %d linear models × %d steps", ds, seed, b.Models, b.WarmSteps)
	var warmJobs []job
	for k := range b.Models {
		warmJobs = append(warmJobs, job{size: b.WarmSteps, run: func() error {
			_, err := finetune.Run(ctx, warm[k], train, nil, settings(b.WarmSteps, linear(k)), nil)
			return err
		}})
	}
	if err := runJobs(warmJobs, cfg.Workers); err != nil {
		return nil, fmt.Errorf("phase 1: %w", err)
	}
	start := make([][]float32, b.Models)
	for k, md := range warm {
		start[k] = make([]float32, md.NumParams())
		md.Params(start[k])
	}

	at := map[int]bool{}
	for _, s := range b.CheckpointSteps() {
		at[s] = true
	}
	sr := &SeedResult{Dataset: ds, Seed: seed, Metrics: map[string]map[string]float64{}}
	arms := append([]string(nil), Methods...)
	if ds == cfg.Ablation {
		for _, v := range AblationVariants() {
			arms = append(arms, v.Name())
		}
	}
	// Phase 2: every arm (method or ablation variant) starts from the
	// phase-1 models; its 5-model run (or, for linear, each model's run)
	// is a job; the jobs share the workers, largest first.
	type armRun struct {
		nets  []*backend.Model
		snaps *front.Snapshots
		trace []Trace
		// failed is the arm's numerical failure (for linear, its first
		// model's in model order), nil when every model finished.
		failed error
		mu     sync.Mutex
	}
	runs := make([]*armRun, len(arms))
	var jobs []job
	var mergers []func()
	for a, name := range arms {
		nets, err := newNets()
		if err != nil {
			return nil, err
		}
		ps := make([]finetune.Problem, len(nets))
		for k, md := range nets {
			if err := md.SetParams(start[k]); err != nil {
				return nil, err
			}
			ps[k] = md
		}
		r := &armRun{nets: nets, snaps: &front.Snapshots{Problems: ps, At: at}}
		runs[a] = r
		// fail records a numerical failure of the arm and lets the other
		// jobs go on; any other error is returned.
		fail := func(err error) error {
			if !numericalFailure(err) {
				return err
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.failed == nil {
				r.failed = err
			}
			return nil
		}
		if name == "linear" {
			// Each model has its own weights: one run per model, each
			// with its own snapshots and trace, merged when all are done.
			per := make([]*front.Snapshots, b.Models)
			traces := make([][]Trace, b.Models)
			for k := range b.Models {
				jobs = append(jobs, job{size: b.Steps, run: func() error {
					per[k] = &front.Snapshots{Problems: ps[k : k+1], At: at}
					tr := &tracer{method: name, at: at}
					s := settings(b.Steps, linear(k))
					s.Workers = 1
					if cfg.tweak != nil {
						cfg.tweak(name, s)
					}
					if _, err := finetune.Run(ctx, ps[k], train, nil, s, finetune.Multi(per[k], tr)); err != nil {
						return fail(fmt.Errorf("phase 2, linear model %d: %w", k, err))
					}
					traces[k] = tr.out
					return nil
				}})
			}
			merge := func() {
				if r.failed != nil {
					return
				}
				r.snaps.Steps = per[0].Steps
				for i := range per[0].Params {
					row := make([][]float32, b.Models)
					for k := range per {
						row[k] = per[k].Params[i][0]
					}
					r.snaps.Params = append(r.snaps.Params, row)
				}
				r.trace = mergeTraces(traces)
			}
			mergers = append(mergers, merge)
			continue
		}
		s := settings(b.Steps, nil)
		s.Workers = 1
		tr := &tracer{method: name, at: at}
		switch name {
		case "mgd":
			s.Method = png.MGD{}
		case "epo":
			per := make(png.PerPoint, b.Models)
			for k := range per {
				per[k] = png.EPO{Preference: []float64{LinearWeights[k], 1 - LinearWeights[k]}}
			}
			s.Method = per
		default: // png and the ablation variants
			v, ok := variantByName(name)
			if !ok {
				return nil, fmt.Errorf("phase 2: unknown method %q", name)
			}
			s.Method = png.PNG{Settings: png.Settings{Alpha: v.Alpha, Gamma: v.Gamma, ThresholdCap: cfg.ThresholdCap, MaxTradeoff: cfg.MaxTradeoff}}
			s.MultiScale, s.DirectionAsGradient = cfg.EnergyScale, cfg.PaperUpdate
			tr.gamma = v.Gamma
			if s.Multi, err = criterion.ParseMulti("energy", names); err != nil {
				return nil, err
			}
		}
		if cfg.tweak != nil {
			cfg.tweak(name, s)
		}
		jobs = append(jobs, job{size: b.Models * b.Steps, run: func() error {
			if _, err := finetune.RunMulti(ctx, ps, train, nil, s, finetune.Multi(r.snaps, tr)); err != nil {
				return fail(fmt.Errorf("phase 2, %s: %w", name, err))
			}
			r.trace = tr.out
			return nil
		}})
	}
	logf(cfg.Log, "%s seed %d: phase 2, %s × %d models × %d steps", ds, seed, strings.Join(arms, ", "), b.Models, b.Steps)
	if err := runJobs(jobs, cfg.Workers); err != nil {
		return nil, err
	}
	for _, m := range mergers {
		m()
	}
	// Scoring: a job per (arm, model), each scoring that model's
	// checkpoints in turn on its own network.
	points := make([][]Point, len(arms)*b.Models)
	jobs = jobs[:0]
	for a, name := range arms {
		r := runs[a]
		if r.failed != nil {
			logf(cfg.Log, "%s seed %d: %s failed, its points are left out: %v", ds, seed, name, r.failed)
			sr.Failures = append(sr.Failures, Failure{Method: name, Error: r.failed.Error()})
			continue
		}
		sr.Trace = append(sr.Trace, r.trace...)
		for k := range b.Models {
			jobs = append(jobs, job{size: len(r.snaps.Params), run: func() error {
				for i, params := range r.snaps.Params {
					if err := r.nets[k].SetParams(params[k]); err != nil {
						return err
					}
					l, acc, err := score(r.nets[k], tasks, test, b.Batch)
					if err != nil {
						return fmt.Errorf("%s model %d at step %d: %w", name, k, r.snaps.Steps[i], err)
					}
					points[a*b.Models+k] = append(points[a*b.Models+k], Point{Method: name, Model: k, Step: r.snaps.Steps[i], Losses: l, Accuracies: acc})
				}
				return nil
			}})
		}
	}
	if err := runJobs(jobs, cfg.Workers); err != nil {
		return nil, err
	}
	// Points in the order of the sequential version: method, checkpoint,
	// model.
	for a := range arms {
		if runs[a].failed != nil {
			continue
		}
		for i := range runs[a].snaps.Params {
			for k := range b.Models {
				sr.Points = append(sr.Points, points[a*b.Models+k][i])
			}
		}
	}
	sr.measure()
	sr.Elapsed = time.Since(t0)
	return sr, nil
}

// measure computes sr's metrics (main table and ablation) from its points,
// NaN for every run that failed.
func (sr *SeedResult) measure() {
	sr.Metrics = measure(sr.Points)
	sr.Ablation = measureAblation(sr.Points)
	for _, f := range sr.Failures {
		nan := map[string]float64{}
		for _, m := range Metrics {
			nan[m] = math.NaN()
		}
		if !isAblation(f.Method) {
			sr.Metrics[f.Method] = nan
		}
		if sr.Ablation != nil && (f.Method == "png" || isAblation(f.Method)) {
			sr.Ablation[f.Method] = maps.Clone(nan)
		}
	}
}

// measure computes the main table's metrics of every method; the IGD+
// reference sets are the non-dominated union of the main methods' points
// (ablation variants are left out, so the main table does not depend on
// whether the ablation ran).
func measure(pts []Point) map[string]map[string]float64 {
	return measureAmong(pts, Methods, func(m string) bool { return !isAblation(m) })
}

// measureAmong computes the metrics of methods, with IGD+ against the
// non-dominated union of the points whose method inUnion accepts.
func measureAmong(pts []Point, methods []string, inUnion func(string) bool) map[string]map[string]float64 {
	var allL, allA [][]float64
	byL, byA := map[string][][]float64{}, map[string][][]float64{}
	for _, p := range pts {
		na := negate(p.Accuracies)
		if inUnion(p.Method) {
			allL, allA = append(allL, p.Losses), append(allA, na)
		}
		byL[p.Method] = append(byL[p.Method], p.Losses)
		byA[p.Method] = append(byA[p.Method], na)
	}
	refL, refA := pick(allL, pareto.NonDominated(allL)), pick(allA, pareto.NonDominated(allA))
	out := map[string]map[string]float64{}
	for _, m := range methods {
		if len(byL[m]) == 0 {
			continue
		}
		lq := front.Measure(byL[m], front.Uniform(2, LossRef), refL)
		aq := front.Measure(byA[m], front.Uniform(2, -AccRef), refA)
		out[m] = map[string]float64{"hv_loss": lq.HV, "igd_loss": lq.IGDPlus, "hv_acc": aq.HV, "igd_acc": aq.IGDPlus}
	}
	return out
}

func negate(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = -x
	}
	return out
}

func pick(pts [][]float64, idx []int) [][]float64 {
	out := make([][]float64, len(idx))
	for i, j := range idx {
		out[i] = pts[j]
	}
	return out
}

// tabulate summarises the metrics over seeds (the seeds with a value:
// a failed run's NaN is left out) and tests PNG against each baseline,
// pairing the seeds where both have a value.
func tabulate(seeds []SeedResult, metrics func(SeedResult) map[string]map[string]float64) map[string]map[string]map[string]*Cell {
	out := map[string]map[string]map[string]*Cell{}
	for _, sr := range seeds {
		ms := metrics(sr)
		if len(ms) == 0 {
			continue
		}
		if out[sr.Dataset] == nil {
			out[sr.Dataset] = map[string]map[string]*Cell{}
		}
		for m, vals := range ms {
			if out[sr.Dataset][m] == nil {
				out[sr.Dataset][m] = map[string]*Cell{}
			}
			for metric, v := range vals {
				c := out[sr.Dataset][m][metric]
				if c == nil {
					c = &Cell{}
					out[sr.Dataset][m][metric] = c
				}
				c.Values = append(c.Values, v)
				c.Seeds = append(c.Seeds, sr.Seed)
			}
		}
	}
	for _, byMethod := range out {
		for _, byMetric := range byMethod {
			for _, c := range byMetric {
				s := Summarize(finite(c.Values))
				c.Mean, c.Std, c.N = s.Mean, s.Std, s.N
			}
		}
		for m, byMetric := range byMethod {
			if m == "png" || byMethod["png"] == nil {
				continue
			}
			for metric, c := range byMetric {
				p := byMethod["png"][metric]
				if p == nil {
					continue
				}
				a, b := paired(p, c)
				if len(a) < 2 {
					continue
				}
				if t, err := PairedT(a, b); err == nil {
					c.VsPNG = &t
				}
			}
		}
	}
	return out
}

// finite returns the values of x that are not NaN.
func finite(x []float64) []float64 {
	var out []float64
	for _, v := range x {
		if !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

// paired returns the values of p and c on the seeds where both have one
// (not NaN), in c's seed order.
func paired(p, c *Cell) (a, b []float64) {
	byseed := map[int64]float64{}
	for i, s := range p.Seeds {
		byseed[s] = p.Values[i]
	}
	for i, s := range c.Seeds {
		pv, ok := byseed[s]
		if !ok || math.IsNaN(pv) || math.IsNaN(c.Values[i]) {
			continue
		}
		a, b = append(a, pv), append(b, c.Values[i])
	}
	return a, b
}

// Better reports whether a is better than b for metric.
func Better(metric string, a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return false
	}
	if higherBetter[metric] {
		return a > b
	}
	return a < b
}
