package finetune_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// scaledQuad is a random m-task problem without data whose coordinates
// differ in curvature by four decades, so that Adam's per-coordinate
// metric is far from the identity: ℓ_i = ½Σ_k D_ik(θ_k − C_ik)².
type scaledQuad struct {
	theta []float32
	D, C  [][]float64
}

func newScaledQuad(seed uint64, m, n int) *scaledQuad {
	rng := rand.New(rand.NewPCG(seed, 3))
	q := &scaledQuad{theta: make([]float32, n)}
	for k := range q.theta {
		q.theta[k] = float32(rng.NormFloat64())
	}
	for i := 0; i < m; i++ {
		d, c := make([]float64, n), make([]float64, n)
		for k := range d {
			d[k] = math.Pow(10, 4*rng.Float64()-2)
			c[k] = rng.NormFloat64()
		}
		q.D, q.C = append(q.D, d), append(q.C, c)
	}
	return q
}

func (q *scaledQuad) Tasks() []string {
	out := make([]string, len(q.D))
	for i := range out {
		out[i] = fmt.Sprintf("t%d", i)
	}
	return out
}
func (q *scaledQuad) NumParams() int       { return len(q.theta) }
func (q *scaledQuad) Params(dst []float32) { copy(dst, q.theta) }
func (q *scaledQuad) SetParams(src []float32) error {
	copy(q.theta, src)
	return nil
}

func (q *scaledQuad) Evaluate(_ finetune.Batch, losses []float64, jac *png.Jacobian) error {
	for i := range q.D {
		var s float64
		for k, t := range q.theta {
			d := float64(t) - q.C[i][k]
			s += q.D[i][k] * d * d
			if jac != nil {
				jac.Row(i)[k] = float32(q.D[i][k] * d)
			}
		}
		losses[i] = s / 2
	}
	return nil
}

// signedLinear is F = Σ w_i ℓ_i with weights of both signs: like the
// energy, it asks some losses to rise, which the control must prevent.
type signedLinear struct {
	tasks []string
	w     []float64
}

func (c signedLinear) Tasks() []string { return c.tasks }
func (c signedLinear) String() string  { return fmt.Sprint("signed", c.w) }
func (c signedLinear) Eval(l, grad []float64) (float64, error) {
	var f float64
	for i, w := range c.w {
		f += w * l[i]
		if grad != nil {
			grad[i] = w
		}
	}
	return f, nil
}

// roundingSlack bounds, per task, how far the measured ∇ℓ_iᵀΔθ can stray
// from the exact change of the update because θ is stored in float32:
// Σ_k |∂ℓ_i/∂θ_k|·(|θ_k| + |θ'_k|)·2⁻²⁴, with J taken at before (the
// parameters the step started from; q holds those after it).
func roundingSlack(q *scaledQuad, before []float32) []float64 {
	after := append([]float32(nil), q.theta...)
	m := len(q.D)
	J := png.NewJacobian(m, len(before))
	q.SetParams(before)
	q.Evaluate(nil, make([]float64, m), &J)
	q.SetParams(after)
	out := make([]float64, m)
	for i := range out {
		for k, g := range J.Row(i) {
			out[i] += math.Abs(float64(g)) * (math.Abs(float64(before[k])) + math.Abs(float64(after[k]))) * 0x1p-24
		}
	}
	return out
}

// hideConstrain is PNG without its Constrain method: the optimizer is
// handed the paper's direction and makes its own update of it, as before
// the metric QP existed.
type hideConstrain struct{ p png.PNG }

func (h hideConstrain) Direction(dst []float32, J png.Jacobian, grad png.Gradient, st *png.State) (png.Info, error) {
	return h.p.Direction(dst, J, grad, st)
}

// TestControlGuaranteeOnAppliedUpdate checks PNG's promise on the update
// the optimizer really makes, on random problems: at every step with the
// control on, every task loss falls to first order at rate ≥ φ per unit
// learning rate, ∇ℓ_iᵀΔθ ≤ −lr·φ (φ_P of the metric QP for momentum SGD
// and Adam, the paper's φ for plain SGD). The same runs with the paper's
// direction handed to momentum SGD or Adam as a gradient (hideConstrain)
// must break it: some loss rises at a control-on step.
func TestControlGuaranteeOnAppliedUpdate(t *testing.T) {
	const lr = 1e-3
	opts := []struct {
		name string
		s    finetune.Settings
	}{
		{"sgd", finetune.Settings{}},
		{"momentum", finetune.Settings{Momentum: 0.9}},
		{"adam", finetune.Settings{Optimizer: "adam"}},
	}
	for _, o := range opts {
		for _, hide := range []bool{false, true} {
			if hide && o.name == "sgd" {
				continue
			}
			name := o.name
			if hide {
				name += "/paper direction as gradient"
			}
			t.Run(name, func(t *testing.T) {
				var on, rises int
				worst, maxScale := math.Inf(1), 0.0
				for seed := uint64(1); seed <= 6; seed++ {
					m := 2 + int(seed%3)
					q := newScaledQuad(seed, m, 40)
					w := make([]float64, m)
					for i := range w {
						w[i] = float64(i%2)*2 - 1 + 0.3*float64(i) // mixed signs
					}
					s := o.s
					s.LR, s.Steps = lr, 60
					s.Criterion = signedLinear{q.Tasks(), w}
					var meth png.Method = png.PNG{Settings: png.Settings{Gamma: 1e-3}}
					if hide {
						meth = hideConstrain{png.PNG{Settings: png.Settings{Gamma: 1e-3}}}
					}
					s.Method = meth
					before := append([]float32(nil), q.theta...)
					rec := recorderFunc(func(st *finetune.Step) error {
						p := st.Points[0]
						slack := roundingSlack(q, before)
						before = append(before[:0], q.theta...)
						if !p.Info.ControlOn {
							return nil
						}
						on++
						phi := p.Info.Phi
						if p.Metric != nil {
							phi = p.Metric.Phi
							maxScale = math.Max(maxScale, p.Metric.Scale)
						} else if !hide && o.name != "sgd" {
							return fmt.Errorf("seed %d step %d: control on with %s but no metric QP", seed, st.Step, o.name)
						}
						for i, d := range p.DLoss {
							if d > 0 {
								rises++
							}
							worst = math.Min(worst, -d/(st.LR*phi))
							if !hide && -d < st.LR*phi-slack[i] {
								t.Errorf("seed %d step %d: ∇ℓ_%dᵀΔθ = %.6g, want ≤ −lr·φ = %.6g", seed, st.Step, i, d, -st.LR*phi)
							}
						}
						return nil
					})
					if _, err := finetune.Run(context.Background(), q, nil, nil, &s, rec); err != nil {
						t.Fatal(err)
					}
				}
				t.Logf("%d control-on steps; min over steps and tasks of −∇ℓ_iᵀΔθ/(lr·φ) = %.4g; %d rising losses; largest step scale ρ %.3g", on, worst, rises, maxScale)
				// ρ measures the optimizer's own step, capped at its
				// steady-direction value: 1/(1−μ) = 10 with momentum, 1
				// with Adam.
				if top := o.s.Momentum; maxScale > 1/(1-top)+1e-12 {
					t.Errorf("largest step scale ρ = %.3g, want ≤ %g", maxScale, 1/(1-top))
				}
				if on < 100 {
					t.Fatalf("only %d control-on steps: the test does not exercise the control", on)
				}
				if hide && rises == 0 {
					t.Errorf("the paper's direction handed to %s never let a loss rise at a control-on step: these problems do not tell the metric QP from the paper's form", o.name)
				}
			})
		}
	}
}

// TestDirectionAsGradient: Settings.DirectionAsGradient hands PNG's
// direction to the optimizer as the paper does: the run is bit-identical
// to one whose method hides png.Constrainer, and no step carries a metric
// QP.
func TestDirectionAsGradient(t *testing.T) {
	for _, o := range []finetune.Settings{{Optimizer: "adam"}, {Momentum: 0.9}} {
		var final [2][]float32
		for v, hide := range []bool{false, true} {
			q := newScaledQuad(5, 3, 40)
			s := o
			s.LR, s.Steps = 1e-3, 60
			s.Criterion = signedLinear{q.Tasks(), []float64{-1, 1.3, 0.6}}
			var meth png.Method = png.PNG{Settings: png.Settings{Gamma: 1e-3}}
			if hide {
				meth = hideConstrain{png.PNG{Settings: png.Settings{Gamma: 1e-3}}}
			} else {
				s.DirectionAsGradient = true
			}
			s.Method = meth
			rec := recorderFunc(func(st *finetune.Step) error {
				if st.Points[0].Metric != nil {
					return fmt.Errorf("step %d: a metric QP with DirectionAsGradient", st.Step)
				}
				return nil
			})
			if _, err := finetune.Run(context.Background(), q, nil, nil, &s, rec); err != nil {
				t.Fatal(err)
			}
			final[v] = append([]float32(nil), q.theta...)
		}
		for k := range final[0] {
			if final[0][k] != final[1][k] {
				t.Fatalf("%s/momentum %g: θ[%d] = %v with DirectionAsGradient, %v with the paper's direction as gradient", o.Optimizer, o.Momentum, k, final[0][k], final[1][k])
			}
		}
	}
}

// wakingQuad is scaledQuad (two tasks, its curvature scaled down) with
// extra coordinates whose task gradients are zero until they come alive,
// as ReLU units do, five more every four steps (step is set by the test
// after each step): then ℓ_0 gains a_k·θ_k and ℓ_1 gains −r_k·a_k·θ_k,
// r_k near 1, so that the two nearly cancel in ∇(ℓ_0 + ℓ_1) and Adam,
// which has no memory there, has a huge metric P = 1/(√v̂+ε) on them.
type wakingQuad struct {
	*scaledQuad
	extra []float32
	a, r  []float64
	step  int
}

func newWakingQuad(seed uint64, n, extra int) *wakingQuad {
	rng := rand.New(rand.NewPCG(seed, 5))
	w := &wakingQuad{scaledQuad: newScaledQuad(seed, 2, n), extra: make([]float32, extra)}
	for _, d := range w.D {
		for k := range d {
			d[k] *= 1e-3 // the drift's pull dominates the tasks'
		}
	}
	for k := 0; k < extra; k++ {
		w.a = append(w.a, 1e-3*(1+rng.Float64()))
		w.r = append(w.r, 0.8+0.4*rng.Float64())
	}
	return w
}

func (w *wakingQuad) NumParams() int { return len(w.theta) + len(w.extra) }
func (w *wakingQuad) Params(dst []float32) {
	copy(dst, w.theta)
	copy(dst[len(w.theta):], w.extra)
}
func (w *wakingQuad) SetParams(src []float32) error {
	copy(w.theta, src)
	copy(w.extra, src[len(w.theta):])
	return nil
}

func (w *wakingQuad) Evaluate(b finetune.Batch, losses []float64, jac *png.Jacobian) error {
	n := len(w.theta)
	var sub *png.Jacobian
	if jac != nil {
		j := png.NewJacobian(2, n)
		sub = &j
	}
	if err := w.scaledQuad.Evaluate(b, losses, sub); err != nil {
		return err
	}
	for k, x := range w.extra {
		var g0, g1 float64
		if w.step >= 1+4*(k/5) {
			g0, g1 = w.a[k], -w.r[k]*w.a[k]
		}
		losses[0] += g0 * float64(x)
		losses[1] += g1 * float64(x)
		if jac != nil {
			jac.Row(0)[n+k], jac.Row(1)[n+k] = float32(g0), float32(g1)
		}
	}
	if jac != nil {
		for i := 0; i < 2; i++ {
			copy(jac.Row(i)[:n], sub.Row(i))
		}
	}
	return nil
}

// wakingSlack is roundingSlack for a wakingQuad.
func wakingSlack(w *wakingQuad, before []float32) []float64 {
	after := make([]float32, w.NumParams())
	w.Params(after)
	J := png.NewJacobian(2, len(before))
	w.SetParams(before)
	w.Evaluate(nil, make([]float64, 2), &J)
	w.SetParams(after)
	out := make([]float64, 2)
	for i := range out {
		for k, g := range J.Row(i) {
			out[i] += math.Abs(float64(g)) * (math.Abs(float64(before[k])) + math.Abs(float64(after[k]))) * 0x1p-24
		}
	}
	return out
}

// TestGuaranteeWithinAdamBound: a heavily weighted drift pulls Adam's
// proposal against every task (an improper trade: the control comes on)
// while the tasks' gradients nearly cancel on coordinates that have just
// come alive (wakingQuad), where Adam's metric P = 1/(√v̂+ε) is huge. The
// constrained update must keep PNG's promise (every loss falls at rate
// ≥ φ_P per unit rate) and stay within Adam's step bound lr·B_t on every
// coordinate; the unbounded correction P∘Jᵀλ did not.
func TestGuaranteeWithinAdamBound(t *testing.T) {
	const lr = 1e-2
	var on, clipped, steps int
	for seed := uint64(1); seed <= 8; seed++ {
		q := newWakingQuad(seed, 40, 40)
		crit, err := criterion.Parse("t0 + t1 + 1000*drift", q.Tasks())
		if err != nil {
			t.Fatal(err)
		}
		s := finetune.Settings{Optimizer: "adam", LR: lr, Steps: 80, Criterion: crit,
			Method: png.PNG{Settings: png.Settings{Gamma: 1e-3, MaxTradeoff: png.RobustMaxTradeoff}}}
		before := make([]float32, q.NumParams())
		q.Params(before)
		rec := recorderFunc(func(st *finetune.Step) error {
			p := st.Points[0]
			slack := wakingSlack(q, before)
			steps++
			theta := make([]float32, q.NumParams())
			q.Params(theta)
			bound := lr*finetune.AdamStepBound(finetune.DefaultBeta1, finetune.DefaultBeta2, st.Step)*(1+1e-6) + 0x1p-22
			for k, x := range theta {
				if d := math.Abs(float64(x) - float64(before[k])); d > bound {
					t.Errorf("seed %d step %d: θ[%d] moved by %.4g, Adam's bound lr·B_t = %.4g", seed, st.Step, k, d, bound)
					break
				}
			}
			before = theta
			q.step = st.Step
			if p.Metric == nil {
				return nil
			}
			on++
			if p.Metric.Clipped > 0 {
				clipped++
			}
			for i, d := range p.DLoss {
				if -d < st.LR*p.Metric.Phi-slack[i] {
					t.Errorf("seed %d step %d: ∇ℓ_%dᵀΔθ = %.6g, want ≤ −lr·φ_P = %.6g", seed, st.Step, i, d, -st.LR*p.Metric.Phi)
				}
			}
			return nil
		})
		if _, err := finetune.Run(context.Background(), q, nil, nil, &s, rec); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d steps, %d with the metric QP, %d of them with coordinates held at Adam's bound", steps, on, clipped)
	if clipped < 8 {
		t.Errorf("only %d steps held a coordinate at the bound: the test does not exercise it", clipped)
	}
}
