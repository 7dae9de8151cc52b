package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/paretonav/paretonav/finetune"
)

// ReadResults decodes a results file written from Results.JSON. The
// scored checkpoints (every seed's points) are all Rescore needs; the
// metrics and the table stored beside them are not read back.
func ReadResults(data []byte) (*Results, error) {
	var raw struct {
		Budget  *Budget  `json:"budget"`
		Elapsed *float64 `json:"elapsed_s"`
		Config  struct {
			ThresholdCap float64 `json:"png_threshold_cap"`
			DataLayout   string  `json:"data_layout"`
			MaxTradeoff  float64 `json:"png_max_tradeoff"`
			EnergyScale  string  `json:"energy_scale"`
			PaperUpdate  bool    `json:"png_paper_update"`
		} `json:"config"`
		Runs []struct {
			Dataset string     `json:"dataset"`
			Seed    *int64     `json:"seed"`
			Elapsed float64    `json:"elapsed_s"`
			Points  []rawPnt   `json:"points"`
			Trace   []rawTrace `json:"trace"`
			// Failures are absent from results written before they
			// were recorded.
			Failures []Failure `json:"failures"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("bench: results: %w", err)
	}
	if raw.Budget == nil || raw.Elapsed == nil || len(raw.Runs) == 0 {
		return nil, fmt.Errorf("bench: results: want the keys budget, elapsed_s and a non-empty runs list")
	}
	r := &Results{Budget: *raw.Budget, Elapsed: seconds(*raw.Elapsed), ThresholdCap: raw.Config.ThresholdCap, DataLayout: raw.Config.DataLayout,
		MaxTradeoff: raw.Config.MaxTradeoff, EnergyScale: raw.Config.EnergyScale, PaperUpdate: raw.Config.PaperUpdate}
	if r.EnergyScale == "" {
		r.EnergyScale = finetune.MultiPerModel // before it was recorded
	}
	for i, run := range raw.Runs {
		if run.Dataset == "" || run.Seed == nil || len(run.Points) == 0 {
			return nil, fmt.Errorf("bench: results: runs[%d]: want dataset, seed and a non-empty points list", i)
		}
		sr := SeedResult{Dataset: run.Dataset, Seed: *run.Seed, Elapsed: seconds(run.Elapsed), Failures: run.Failures}
		for j, f := range run.Failures {
			if f.Method == "" {
				return nil, fmt.Errorf("bench: results: runs[%d].failures[%d]: want a method", i, j)
			}
		}
		for j, p := range run.Points {
			if p.Method == "" || len(p.Losses) == 0 || len(p.Losses) != len(p.Accuracies) {
				return nil, fmt.Errorf("bench: results: runs[%d].points[%d]: want a method and as many accuracies as losses", i, j)
			}
			sr.Points = append(sr.Points, Point{Method: p.Method, Model: p.Model, Step: p.Step,
				Losses: nanFor(p.Losses), Accuracies: nanFor(p.Accuracies)})
		}
		for _, t := range run.Trace {
			sr.Trace = append(sr.Trace, t.trace())
		}
		r.Seeds = append(r.Seeds, sr)
	}
	return r, nil
}

// rawTrace is a Trace as JSON holds it (non-finite values are null); old
// results have none.
type rawTrace struct {
	Method    string     `json:"method"`
	Step      int        `json:"step"`
	Steps     int        `json:"steps"`
	G         *float64   `json:"g"`
	EBar      *float64   `json:"ebar"`
	GOverEBar *float64   `json:"g_over_ebar"`
	ControlOn *float64   `json:"control_on"`
	TrainLoss []*float64 `json:"train_loss"`
	Descent   []*float64 `json:"descent"`
}

func (t rawTrace) trace() Trace {
	one := func(x *float64) float64 {
		if x == nil {
			return math.NaN()
		}
		return *x
	}
	return Trace{Method: t.Method, Step: t.Step, Steps: t.Steps, G: one(t.G), EBar: one(t.EBar), GOverEBar: one(t.GOverEBar),
		ControlOn: one(t.ControlOn), TrainLoss: nanFor(t.TrainLoss), Descent: nanFor(t.Descent)}
}

// rawPnt is a Point as JSON holds it: non-finite values are null.
type rawPnt struct {
	Method     string     `json:"method"`
	Model      int        `json:"model"`
	Step       int        `json:"step"`
	Losses     []*float64 `json:"losses"`
	Accuracies []*float64 `json:"accuracies"`
}

func nanFor(v []*float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.NaN()
		if x != nil {
			out[i] = *x
		}
	}
	return out
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Rescore recomputes every seed's metrics from its scored checkpoints with
// this version's measures (references LossRef and AccRef, IGD+ against the
// union of the methods present; NaN for the runs the file records as
// failed), the ablation's where the file holds its variants, and the tables over seeds with their paired t-tests. Nothing
// is retrained: the checkpoints' losses and accuracies (and the traces)
// are those of the run that wrote the file.
func (r *Results) Rescore() {
	for i := range r.Seeds {
		r.Seeds[i].measure()
	}
	r.Table = tabulate(r.Seeds, func(sr SeedResult) map[string]map[string]float64 { return sr.Metrics })
	r.AblationTable = tabulate(r.Seeds, func(sr SeedResult) map[string]map[string]float64 { return sr.Ablation })
}
