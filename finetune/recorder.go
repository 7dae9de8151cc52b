package finetune

import (
	"errors"
	"fmt"
	"time"

	"github.com/paretonav/paretonav/png"
)

// Recorder watches a run from outside the algorithm (gonum optimize's
// Recorder style): the progress bar, the JSON-lines log and the CSV trace
// are Recorders the caller plugs in. A Recorder's error stops the run.
type Recorder interface {
	// Init is called once before the first step with the resolved
	// configuration.
	Init(cfg *Config) error
	// Record is called after every completed step. st and its slices are
	// reused by the loop: copy what you keep.
	Record(st *Step) error
	// Done is called once at the end, also when the run fails or is
	// interrupted.
	Done(res *Result) error
}

// Config is the resolved configuration of a run, as recorded on the first
// line of a JSON-lines log.
type Config struct {
	Kind      string   `json:"kind"` // always "config"
	Tasks     []string `json:"tasks"`
	NumParams int      `json:"num_params"`
	Models    int      `json:"models"`
	// Method names the direction method: "png", "mgd", "linear", or for
	// other methods their String (else Go type and fields). The method's
	// parameters follow with defaults resolved: Alpha, Gamma and Discount
	// for "png" (and ThresholdCap when set), Weights for "linear" (1/m each
	// when none were given), Preference for "epo" (EPO, or a png.PerPoint
	// of EPOs: one vector per model, 1 each when none was given); they are
	// absent for other methods.
	Method       string   `json:"method"`
	Alpha        *float64 `json:"alpha,omitempty"`
	Gamma        *float64 `json:"gamma,omitempty"`
	Discount     *float64 `json:"discount,omitempty"`
	ThresholdCap float64  `json:"threshold_cap,omitempty"`
	MaxTradeoff  float64  `json:"max_tradeoff,omitempty"`
	// DirectionAsGradient is Settings.DirectionAsGradient.
	DirectionAsGradient bool           `json:"direction_as_gradient,omitempty"`
	Weights             []float64      `json:"weights,omitempty"`
	Preference          [][]float64    `json:"preference,omitempty"`   // "epo": each model's preference r
	FirstMethod         string         `json:"first_method,omitempty"` // png.Staged: the method of the first FirstSteps steps
	FirstSteps          int            `json:"first_steps,omitempty"`
	Criterion           string         `json:"criterion"`
	PerModel            string         `json:"per_model,omitempty"` // Settings.PerModel
	Terms               []string       `json:"terms,omitempty"`     // the problem's terms (TermProblem), logged beside the tasks
	Drift               bool           `json:"drift,omitempty"`     // a criterion reads drift, ‖θ − θ₀‖²
	Multi               string         `json:"multi,omitempty"`
	MultiScale          string         `json:"multi_scale,omitempty"`
	MultiTrade          bool           `json:"multi_trade,omitempty"`
	Optimizer           string         `json:"optimizer"`
	Momentum            float64        `json:"momentum,omitempty"`
	Beta1               float64        `json:"beta1,omitempty"`
	Beta2               float64        `json:"beta2,omitempty"`
	Eps                 float64        `json:"eps,omitempty"`
	LR                  float64        `json:"lr"`
	LRSchedule          string         `json:"lr_schedule"`
	Steps               int            `json:"steps"`
	StartStep           int            `json:"start_step"`
	BatchSize           int            `json:"batch_size,omitempty"`
	TrainExamples       int            `json:"train_examples"`
	ValExamples         int            `json:"val_examples"`
	Seed                int64          `json:"seed"`
	ValEvery            int            `json:"val_every,omitempty"`
	CheckpointEvery     int            `json:"checkpoint_every,omitempty"`
	CheckpointPath      string         `json:"checkpoint_path,omitempty"`
	MaxRetries          int            `json:"max_retries"`
	DivergeFactor       float64        `json:"diverge_factor"`
	Workers             int            `json:"workers"`
	Meta                map[string]any `json:"meta,omitempty"`
}

// Step is what one completed step saw. Losses and Info of a point are
// measured at the parameters before the step's update; ValLosses after it.
type Step struct {
	Step    int           // 1-based number of the step
	Epoch   int           // 0-based epoch of its batch
	F       float64       // criterion value (RunMulti: the multi-point criterion, or the sum of the points' values)
	LR      float64       // learning rate used for the update (schedule × retry halvings)
	Retries int           // rollbacks this step needed
	Elapsed time.Duration // since the run (or the resumed run) started
	// Direction is the time the step's directions took: the method's
	// directions of every model and, with momentum or Adam, PNG's
	// constrained update of the optimizer's proposal within its bound
	// (png.PNG.Constrain), as the loop computes them; not the gradients.
	Direction time.Duration
	Points    []Point // one per model; Run has one
}

// Point is one model's part of a step.
type Point struct {
	Losses []float64 // task losses on the step's batch
	Terms  []float64 // term values on the step's batch (Config.Terms), nil without terms
	Drift  float64   // ‖θ − θ₀‖² at the step's parameters (0 unless Config.Drift)
	F      float64   // this point's Criterion value (0 when only Multi is set)
	Info   png.Info  // what the method found: g, e, control, λ, ‖v‖
	// Metric is what the QP on the optimizer's proposal found (momentum
	// SGD and Adam with the control on; png.PNG.Constrain): g_P, the step
	// scale ρ, the rate φ_P every loss decreases at along the update, λ.
	// nil when not posed.
	Metric *png.MetricInfo
	// DLoss is the first-order change of each task loss under the update
	// the optimizer actually applied: ∇ℓ_iᵀΔθ with Δθ = θ_after − θ_before
	// (negative: the loss decreases). With the control on, PNG promises
	// DLoss_i ≤ −lr·φ (−lr·φ_P of Metric when that is set).
	DLoss     []float64
	ValLosses []float64 // validation losses, nil unless validated at this step
	// ValMetrics are the task metrics of the same validation pass
	// (Settings.ValMeter), nil without.
	ValMetrics map[string]map[string]float64
}

// Checkpointer is a Recorder told when a checkpoint was written: a log
// that commits what it holds there keeps the steps the checkpoint holds,
// so that a resumed run continues it.
type Checkpointer interface {
	// Checkpointed is called after the checkpoint of step (the steps
	// completed) was written.
	Checkpointed(step int) error
}

// Multi returns a Recorder that passes every call to each of recs in turn;
// nil entries are skipped. All are called even if one fails; the errors
// are joined.
func Multi(recs ...Recorder) Recorder { return multiRecorder(recs) }

type multiRecorder []Recorder

func (m multiRecorder) each(f func(Recorder) error) error {
	var errs []error
	for i, r := range m {
		if r == nil {
			continue
		}
		if err := f(r); err != nil {
			errs = append(errs, fmt.Errorf("recorder %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

func (m multiRecorder) Init(cfg *Config) error {
	return m.each(func(r Recorder) error { return r.Init(cfg) })
}
func (m multiRecorder) Record(st *Step) error {
	return m.each(func(r Recorder) error { return r.Record(st) })
}
func (m multiRecorder) Done(res *Result) error {
	return m.each(func(r Recorder) error { return r.Done(res) })
}

// Checkpointed passes the call to every recorder that is a Checkpointer.
func (m multiRecorder) Checkpointed(step int) error {
	return m.each(func(r Recorder) error {
		if c, ok := r.(Checkpointer); ok {
			return c.Checkpointed(step)
		}
		return nil
	})
}
