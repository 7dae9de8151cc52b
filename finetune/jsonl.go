package finetune

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// JSONLRecorder writes a JSON-lines log: the first line is the resolved
// Config, then one object per step, then one "result" object. A step of
// Run reads
//
//	{"step":1,"epoch":0,"losses":{"a":0.5,"b":0.2},"F":0.7,"g":0.01,"e":0.001,
//	 "control":true,"phi":0.005,"lambda":[0.1,0],"vnorm":0.3,
//	 "dloss":{"a":-6e-6,"b":-5e-6},"lr":0.001,"seconds":0.01,"direction_ms":0.4}
//
// where phi is the control φ (0 when off), dloss the first-order change
// ∇ℓ_iᵀΔθ of each loss under the update the optimizer applied, seconds
// the time since the run started and direction_ms the time this step's
// direction took (Step.Direction: the method's direction and, with Adam
// or momentum, the constrained update within Adam's step bound). With terms
// (Config.Terms) a "terms" object follows "losses", and "drift"
// (‖θ − θ₀‖²) when a criterion reads it: "terms":{"adv":0.3},"drift":0.01.
// With momentum SGD or Adam and the control on, "metric":{"g":..,
// "scale":..,"phi":..,"lambda":[..]} reports the QP on the optimizer's
// proposal (png.PNG.Constrain; scale is the step scale ρ): along the
// update applied every loss falls at rate ≥ metric.phi; "clipped":k
// follows when k parameters of Adam's update were held at its step bound
// (png.MetricInfo.Clipped), and "inexact":true when the bound's dual was
// not solved within its passes (png.MetricInfo.Inexact: the update meets
// the rate but is not the closest one). "improper":true marks a step whose control is
// on only because the criterion's free step was an improper trade
// (png.Settings.MaxTradeoff), and "held":true one where the point then
// held still (png.Info.Held).
//
// With several models, the per-model fields move into "models":[{...}].
// Non-finite numbers, which JSON cannot hold, are written as null.
type JSONLRecorder struct {
	W     io.Writer
	tasks []string
	terms []string
	drift bool
}

// NewJSONLRecorder returns a JSONLRecorder writing to w.
func NewJSONLRecorder(w io.Writer) *JSONLRecorder { return &JSONLRecorder{W: w} }

// Init writes the configuration line.
func (r *JSONLRecorder) Init(cfg *Config) error {
	r.tasks, r.terms, r.drift = cfg.Tasks, cfg.Terms, cfg.Drift
	return r.line(cfg)
}

// jsonPoint is one model's fields in a step line.
type jsonPoint struct {
	Losses    map[string]jsonFloat `json:"losses"`
	Terms     map[string]jsonFloat `json:"terms,omitempty"`
	Drift     *jsonFloat           `json:"drift,omitempty"`
	F         *jsonFloat           `json:"F,omitempty"`
	G         jsonFloat            `json:"g"`
	E         jsonFloat            `json:"e"`
	Control   bool                 `json:"control"`
	Improper  bool                 `json:"improper,omitempty"`
	Held      bool                 `json:"held,omitempty"`
	Phi       jsonFloat            `json:"phi"`
	Lambda    []jsonFloat          `json:"lambda"`
	VNorm     jsonFloat            `json:"vnorm"`
	Metric    *jsonMetric          `json:"metric,omitempty"`
	EPO       *jsonEPO             `json:"epo,omitempty"`
	DLoss     map[string]jsonFloat `json:"dloss,omitempty"`
	ValLosses map[string]jsonFloat `json:"val_losses,omitempty"`
	// ValMetrics are the task metrics of the validation pass
	// (Settings.ValMeter): {"TASK": {"miou": ..., ...}}.
	ValMetrics map[string]map[string]jsonFloat `json:"val_metrics,omitempty"`
}

// jsonMetric is a png.MetricInfo in a step line.
type jsonMetric struct {
	G       jsonFloat   `json:"g"`
	Scale   jsonFloat   `json:"scale"`
	Phi     jsonFloat   `json:"phi"`
	Lambda  []jsonFloat `json:"lambda"`
	Clipped int         `json:"clipped,omitempty"`
	Inexact bool        `json:"inexact,omitempty"`
}

// jsonEPO is EPO's part of a png.Info in a step line: the mode, the
// non-uniformity μ and the LP's weights β.
type jsonEPO struct {
	Mode string      `json:"mode"`
	Mu   jsonFloat   `json:"mu"`
	Beta []jsonFloat `json:"beta"`
}

type jsonStep struct {
	Step    int       `json:"step"`
	Epoch   int       `json:"epoch"`
	F       jsonFloat `json:"F"`
	LR      jsonFloat `json:"lr"`
	Retries int       `json:"retries,omitempty"`
	Seconds jsonFloat `json:"seconds"`
	// DirectionMS is Step.Direction in milliseconds.
	DirectionMS jsonFloat   `json:"direction_ms"`
	*jsonPoint              // Run: the only model's fields inline
	Models      []jsonPoint `json:"models,omitempty"`
}

// Record writes one step line.
func (r *JSONLRecorder) Record(st *Step) error {
	js := jsonStep{Step: st.Step, Epoch: st.Epoch, F: jsonFloat(st.F), LR: jsonFloat(st.LR), Retries: st.Retries,
		Seconds: jsonFloat(st.Elapsed.Seconds()), DirectionMS: jsonFloat(float64(st.Direction.Microseconds()) / 1000)}
	pts := make([]jsonPoint, len(st.Points))
	for k, p := range st.Points {
		pts[k] = jsonPoint{Losses: r.named(p.Losses), Terms: r.termMap(p.Terms), Drift: r.driftOf(p.Drift), G: jsonFloat(p.Info.G), E: jsonFloat(p.Info.E),
			Control: p.Info.ControlOn, Improper: p.Info.Improper, Held: p.Info.Held, Phi: jsonFloat(p.Info.Phi), Lambda: floats(p.Info.Lambda), VNorm: jsonFloat(p.Info.VNorm),
			DLoss: r.named(p.DLoss), ValLosses: r.named(p.ValLosses), ValMetrics: jsonMetrics(p.ValMetrics)}
		if mi := p.Metric; mi != nil {
			pts[k].Metric = &jsonMetric{G: jsonFloat(mi.G), Scale: jsonFloat(mi.Scale), Phi: jsonFloat(mi.Phi), Lambda: floats(mi.Lambda), Clipped: mi.Clipped, Inexact: mi.Inexact}
		}
		if p.Info.Mode != "" {
			pts[k].EPO = &jsonEPO{Mode: p.Info.Mode, Mu: jsonFloat(p.Info.Mu), Beta: floats(p.Info.Beta)}
		}
		if len(st.Points) > 1 {
			f := jsonFloat(p.F)
			pts[k].F = &f
		}
	}
	if len(pts) == 1 {
		js.jsonPoint = &pts[0]
	} else {
		js.Models = pts
	}
	return r.line(js)
}

// Done writes the result line: {"kind":"result","status":...,"steps":...,
// "F":...,"models":[{"losses":{...},"g":...,"F":...}]}.
func (r *JSONLRecorder) Done(res *Result) error {
	if res == nil {
		return nil
	}
	type point struct {
		Losses     map[string]jsonFloat            `json:"losses"`
		Terms      map[string]jsonFloat            `json:"terms,omitempty"`
		Drift      *jsonFloat                      `json:"drift,omitempty"`
		F          jsonFloat                       `json:"F"`
		G          jsonFloat                       `json:"g"`
		ValLosses  map[string]jsonFloat            `json:"val_losses,omitempty"`
		ValMetrics map[string]map[string]jsonFloat `json:"val_metrics,omitempty"`
	}
	out := struct {
		Kind   string    `json:"kind"`
		Status Status    `json:"status"`
		Steps  int       `json:"steps"`
		F      jsonFloat `json:"F"`
		Models []point   `json:"models"`
	}{Kind: "result", Status: res.Status, Steps: res.Steps, F: jsonFloat(res.F)}
	for _, p := range res.Points {
		out.Models = append(out.Models, point{Losses: r.named(p.Losses), Terms: r.termMap(p.Terms), Drift: r.driftOf(p.Drift), F: jsonFloat(p.F), G: jsonFloat(p.G), ValLosses: r.named(p.ValLosses), ValMetrics: jsonMetrics(p.ValMetrics)})
	}
	return r.line(out)
}

func (r *JSONLRecorder) named(v []float64) map[string]jsonFloat {
	if v == nil {
		return nil
	}
	m := make(map[string]jsonFloat, len(v))
	for i, x := range v {
		name := fmt.Sprintf("task%d", i)
		if i < len(r.tasks) {
			name = r.tasks[i]
		}
		m[name] = jsonFloat(x)
	}
	return m
}

// termMap names the term values v (nil without terms).
func (r *JSONLRecorder) termMap(v []float64) map[string]jsonFloat {
	if len(r.terms) == 0 || len(v) != len(r.terms) {
		return nil
	}
	m := make(map[string]jsonFloat, len(v))
	for i, x := range v {
		m[r.terms[i]] = jsonFloat(x)
	}
	return m
}

// driftOf returns d for the log, or nil when no criterion reads drift.
func (r *JSONLRecorder) driftOf(d float64) *jsonFloat {
	if !r.drift {
		return nil
	}
	f := jsonFloat(d)
	return &f
}

func (r *JSONLRecorder) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("finetune: JSON-lines log: %w", err)
	}
	_, err = r.W.Write(append(b, '\n'))
	return err
}

// jsonFloat is a float64 that encodes NaN and ±Inf as null.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(x)
}

func floats(v []float64) []jsonFloat {
	out := make([]jsonFloat, len(v))
	for i, x := range v {
		out[i] = jsonFloat(x)
	}
	return out
}

// jsonMetrics converts task metrics for a JSON line (NaN → null); nil
// stays nil.
func jsonMetrics(m map[string]map[string]float64) map[string]map[string]jsonFloat {
	if m == nil {
		return nil
	}
	out := make(map[string]map[string]jsonFloat, len(m))
	for task, ms := range m {
		out[task] = make(map[string]jsonFloat, len(ms))
		for k, v := range ms {
			out[task][k] = jsonFloat(v)
		}
	}
	return out
}
