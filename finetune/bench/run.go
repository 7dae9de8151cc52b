package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
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
	Elapsed time.Duration                 `json:"elapsed_ns"`
}

// Cell is one method's metric over the seeds.
type Cell struct {
	Mean, Std float64
	Values    []float64
	// VsPNG is the paired t-test of PNG against this method (nil for PNG).
	VsPNG *TTest
}

// Results is the outcome of Run.
type Results struct {
	Budget  Budget
	Seeds   []SeedResult
	Table   map[string]map[string]map[string]*Cell // dataset → method → metric
	Elapsed time.Duration
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
	var tasks []backend.Task
	for _, s := range Tasks {
		t, err := backend.ParseTask(s)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	start := time.Now()
	res := &Results{Budget: b, Table: map[string]map[string]map[string]*Cell{}}
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
	res.Table = tabulate(res.Seeds)
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
	if err := parallel(b.Models, cfg.Workers, func(k int) error {
		_, err := finetune.Run(ctx, warm[k], train, nil, settings(b.WarmSteps, linear(k)), nil)
		return err
	}); err != nil {
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
	for _, method := range Methods {
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
		snaps := &front.Snapshots{Problems: ps, At: at}
		logf(cfg.Log, "%s seed %d: phase 2, %s × %d models × %d steps", ds, seed, method, b.Models, b.Steps)
		switch method {
		case "linear":
			// Each model has its own weights: one run per model, each
			// with its own snapshots.
			per := make([]*front.Snapshots, b.Models)
			err = parallel(b.Models, cfg.Workers, func(k int) error {
				per[k] = &front.Snapshots{Problems: ps[k : k+1], At: at}
				_, err := finetune.Run(ctx, ps[k], train, nil, settings(b.Steps, linear(k)), per[k])
				return err
			})
			if err == nil {
				snaps.Steps = per[0].Steps
				for i := range per[0].Params {
					row := make([][]float32, b.Models)
					for k := range per {
						row[k] = per[k].Params[i][0]
					}
					snaps.Params = append(snaps.Params, row)
				}
			}
		case "mgd":
			_, err = finetune.RunMulti(ctx, ps, train, nil, settings(b.Steps, png.MGD{}), snaps)
		case "epo":
			per := make(png.PerPoint, b.Models)
			for k := range per {
				per[k] = png.EPO{Preference: []float64{LinearWeights[k], 1 - LinearWeights[k]}}
			}
			_, err = finetune.RunMulti(ctx, ps, train, nil, settings(b.Steps, per), snaps)
		case "png":
			s := settings(b.Steps, png.PNG{})
			if s.Multi, err = criterion.ParseMulti("energy", names); err != nil {
				return nil, err
			}
			_, err = finetune.RunMulti(ctx, ps, train, nil, s, snaps)
		}
		if err != nil {
			return nil, fmt.Errorf("phase 2, %s: %w", method, err)
		}
		for i, params := range snaps.Params {
			for k, theta := range params {
				if err := nets[k].SetParams(theta); err != nil {
					return nil, err
				}
				l, a, err := front.Score(nets[k], tasks, test, b.Batch)
				if err != nil {
					return nil, fmt.Errorf("%s model %d at step %d: %w", method, k, snaps.Steps[i], err)
				}
				sr.Points = append(sr.Points, Point{Method: method, Model: k, Step: snaps.Steps[i], Losses: l, Accuracies: a})
			}
		}
	}
	sr.Metrics = measure(sr.Points)
	sr.Elapsed = time.Since(t0)
	return sr, nil
}

// measure computes every method's metrics; the IGD+ reference sets are
// the non-dominated union of all methods' points.
func measure(pts []Point) map[string]map[string]float64 {
	var allL, allA [][]float64
	byL, byA := map[string][][]float64{}, map[string][][]float64{}
	for _, p := range pts {
		na := negate(p.Accuracies)
		allL, allA = append(allL, p.Losses), append(allA, na)
		byL[p.Method] = append(byL[p.Method], p.Losses)
		byA[p.Method] = append(byA[p.Method], na)
	}
	refL, refA := pick(allL, pareto.NonDominated(allL)), pick(allA, pareto.NonDominated(allA))
	out := map[string]map[string]float64{}
	for _, m := range Methods {
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

// tabulate summarises the metrics over seeds and tests PNG against each
// baseline, pairing seeds.
func tabulate(seeds []SeedResult) map[string]map[string]map[string]*Cell {
	out := map[string]map[string]map[string]*Cell{}
	for _, sr := range seeds {
		if out[sr.Dataset] == nil {
			out[sr.Dataset] = map[string]map[string]*Cell{}
		}
		for m, vals := range sr.Metrics {
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
			}
		}
	}
	for _, byMethod := range out {
		for _, byMetric := range byMethod {
			for _, c := range byMetric {
				s := Summarize(c.Values)
				c.Mean, c.Std = s.Mean, s.Std
			}
		}
		for m, byMetric := range byMethod {
			if m == "png" || byMethod["png"] == nil {
				continue
			}
			for metric, c := range byMetric {
				p := byMethod["png"][metric]
				if p == nil || len(p.Values) != len(c.Values) || len(c.Values) < 2 {
					continue
				}
				if t, err := PairedT(p.Values, c.Values); err == nil {
					c.VsPNG = &t
				}
			}
		}
	}
	return out
}

// parallel runs f(0..n−1) on up to workers goroutines and returns the
// errors joined.
func parallel(n, workers int, f func(k int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[k] = f(k)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
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
