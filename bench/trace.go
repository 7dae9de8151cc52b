package bench

import (
	"math"

	"github.com/paretonav/paretonav/finetune"
)

// Trace is what one method did over a stretch of phase 2, all its models
// together: the steps after the previous checkpoint up to and including
// Step. It measures why methods differ: how close to Pareto-stationary the
// models are (g), how g compares with PNG's threshold scale ē, how often
// the control is on, and how fast each loss went down.
type Trace struct {
	Method string `json:"method"`
	Step   int    `json:"step"`  // the checkpoint that ends the stretch
	Steps  int    `json:"steps"` // model-steps averaged (steps × models)
	// G is the mean of g(θ) = min over the simplex of ‖Σ ω_i ∇ℓ_i‖² on the
	// step's batch (every method reports it).
	G float64 `json:"g"`
	// EBar is the mean of ē, the discounted average of (1/m)Σ‖∇ℓ_i‖² that
	// PNG's threshold e = γ·ē scales (read as e/γ: with a threshold cap it
	// is the capped value the threshold used); GOverEBar the mean of g/ē
	// per step: the control is on while g/ē > γ. Both 0 for methods other
	// than PNG.
	EBar      float64 `json:"ebar"`
	GOverEBar float64 `json:"g_over_ebar"`
	// ControlOn is the share of model-steps with the control on (PNG:
	// g > e; EPO: balance mode; 0 for linear and MGD).
	ControlOn float64 `json:"control_on"`
	// TrainLoss is the mean of each task's loss on the steps' batches.
	TrainLoss []float64 `json:"train_loss"`
	// Descent is the mean first-order change of each task loss per step,
	// ∇ℓ_iᵀΔθ under the update applied (negative: the loss went down).
	Descent []float64 `json:"descent"`
}

// tracer is a finetune.Recorder that accumulates Traces of a method's run
// (one Record per step, every model's point), closing one at each
// checkpoint step. gamma is PNG's γ (0: not PNG, no ē).
type tracer struct {
	method string
	gamma  float64
	at     map[int]bool
	out    []Trace
	cur    traceSums
}

type traceSums struct {
	n, ratios          int
	g, ebar, ratio, on float64
	loss, descent      []float64
	descentN           int
}

func (t *tracer) Init(*finetune.Config) error { return nil }

func (t *tracer) Record(st *finetune.Step) error {
	c := &t.cur
	for _, p := range st.Points {
		if c.loss == nil {
			c.loss = make([]float64, len(p.Losses))
			c.descent = make([]float64, len(p.Losses))
		}
		c.n++
		c.g += p.Info.G
		if p.Info.ControlOn {
			c.on++
		}
		for i, l := range p.Losses {
			c.loss[i] += l
		}
		if len(p.DLoss) == len(c.descent) {
			c.descentN++
			for i, d := range p.DLoss {
				c.descent[i] += d
			}
		}
		if t.gamma > 0 && p.Info.E > 0 {
			e := p.Info.E / t.gamma
			c.ebar += e
			c.ratio += p.Info.G / e
			c.ratios++
		}
	}
	if t.at[st.Step] {
		t.out = append(t.out, c.close(t.method, st.Step))
		t.cur = traceSums{}
	}
	return nil
}

func (t *tracer) Done(*finetune.Result) error { return nil }

// close returns the means of the stretch.
func (c *traceSums) close(method string, step int) Trace {
	tr := Trace{Method: method, Step: step, Steps: c.n}
	if c.n == 0 {
		return tr
	}
	n := float64(c.n)
	tr.G, tr.ControlOn = c.g/n, c.on/n
	if c.ratios > 0 {
		tr.EBar, tr.GOverEBar = c.ebar/float64(c.ratios), c.ratio/float64(c.ratios)
	}
	tr.TrainLoss = make([]float64, len(c.loss))
	tr.Descent = make([]float64, len(c.loss))
	for i := range c.loss {
		tr.TrainLoss[i] = c.loss[i] / n
		tr.Descent[i] = math.NaN()
		if c.descentN > 0 {
			tr.Descent[i] = c.descent[i] / float64(c.descentN)
		}
	}
	return tr
}

// mergeTraces combines the per-model traces of a method trained one model
// at a time (linear) into one per checkpoint, weighting by steps.
func mergeTraces(per [][]Trace) []Trace {
	if len(per) == 0 {
		return nil
	}
	out := make([]Trace, len(per[0]))
	for i := range out {
		var sums traceSums
		var method string
		var step int
		for _, ts := range per {
			if i >= len(ts) {
				continue
			}
			t := ts[i]
			method, step = t.Method, t.Step
			w := float64(t.Steps)
			if sums.loss == nil {
				sums.loss, sums.descent = make([]float64, len(t.TrainLoss)), make([]float64, len(t.TrainLoss))
			}
			sums.n += t.Steps
			sums.g += w * t.G
			sums.on += w * t.ControlOn
			if t.EBar > 0 {
				sums.ebar += w * t.EBar
				sums.ratio += w * t.GOverEBar
				sums.ratios += t.Steps
			}
			for k := range t.TrainLoss {
				sums.loss[k] += w * t.TrainLoss[k]
				if !math.IsNaN(t.Descent[k]) {
					sums.descent[k] += w * t.Descent[k]
				}
			}
			if len(t.Descent) > 0 && !math.IsNaN(t.Descent[0]) {
				sums.descentN += t.Steps
			}
		}
		out[i] = sums.close(method, step)
	}
	return out
}
