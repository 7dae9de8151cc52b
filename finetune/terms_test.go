package finetune_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/models/synthetic"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// termQuad is quad with one term, pull = ½‖θ − p‖², a loss that is not a
// task: its gradient θ − p leaves the span of the task gradients wherever
// p is off the line through the two centres.
type termQuad struct {
	*quad
	p     []float64
	calls int // EvaluateTerms calls
}

func (q *termQuad) Terms() []string { return []string{"pull"} }

func (q *termQuad) EvaluateTerms(b finetune.Batch, losses, terms []float64, jac, tjac *png.Jacobian) error {
	q.calls++
	if err := q.Evaluate(b, losses, jac); err != nil {
		return err
	}
	var s float64
	for j, t := range q.theta {
		d := float64(t) - q.p[j]
		s += d * d
		if tjac != nil {
			tjac.Row(0)[j] = float32(d)
		}
	}
	terms[0] = s / 2
	return nil
}

// pngGamma is a small γ: PNG converges to the band g(θ) ≲ e = γ·ē around
// the Pareto set (the paper's guarantee), here ē ≈ 1.2 and
// g = dist(θ, set)², so the end point lies within ≈ 0.05 of the set.
const pngGamma = 1e-3

// TestTermsReachAnalyticOptimum minimises criteria that read a term or
// drift over the Pareto set of quad, the segment {(s, 1): −1 ≤ s ≤ 1}.
// Plain descent on these criteria leaves the set (their minimisers are
// off it, their gradients outside the span of J); PNG ends at the
// constrained minimiser (s*, 1), s* worked out by hand: s within 0.005,
// and within its band g ≤ 2.5·e of the set (the last step's overshoot).
func TestTermsReachAnalyticOptimum(t *testing.T) {
	for _, tc := range []struct {
		name  string
		expr  string
		init  []float32
		want  []float64 // θ* = (s*, 1) on the segment
		terms bool
	}{
		// pull = ½‖θ − (0.5, 3)‖²: minimiser on the segment (0.5, 1).
		{"term", "pull", []float32{-0.4, 0.8}, []float64{0.5, 1}, true},
		// drift = ‖θ − (0.3, 2)‖²: the projection of the start (0.3, 1).
		{"drift", "drift", []float32{0.3, 2}, []float64{0.3, 1}, false},
		// a + drift, a = ½(s − 1)²: ½(s−1)² + (s−0.3)² is least at s = 1.6/3.
		{"task and drift", "a + drift", []float32{0.3, 2}, []float64{1.6 / 3, 1}, false},
		// 2·pull + drift from (0, 1.5): 2·½(s−0.5)² + s² is least at s = 0.25.
		{"term and drift", "2*pull + drift", []float32{0, 1.5}, []float64{0.25, 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p finetune.Problem = newQuad(tc.init...)
			var terms []string
			if tc.terms {
				p = &termQuad{quad: p.(*quad), p: []float64{0.5, 3}}
				terms = []string{"pull"}
			}
			crit, err := criterion.Parse(tc.expr, []string{"a", "b"}, terms...)
			if err != nil {
				t.Fatal(err)
			}
			s := finetune.Settings{Method: png.PNG{Settings: png.Settings{Gamma: pngGamma}}, Criterion: crit,
				LR: 0.2, LRSchedule: "cosine", Steps: 2000}
			var steps stepLog
			res, err := finetune.Run(context.Background(), p, nil, nil, &s, &steps)
			if err != nil {
				t.Fatal(err)
			}
			th := res.Points[0].Params
			e := steps.steps[len(steps.steps)-1].Points[0].Info.E
			if math.Abs(float64(th[0])-tc.want[0]) > 0.005 || math.Abs(float64(th[1])-tc.want[1]) > 0.06 {
				t.Errorf("θ = %v, want %v", th, tc.want)
			}
			if res.G() > 2.5*e {
				t.Errorf("final g = %g, want ≤ 2.5·e = %g (near the Pareto set)", res.G(), 2.5*e)
			}
			// The control's promise holds with ∇F outside the span of J:
			// with plain SGD the applied update changes every task loss
			// by ∇ℓ_iᵀΔθ = −lr·∇ℓ_iᵀv ≤ −lr·φ.
			on := 0
			for _, st := range steps.steps {
				pt := st.Points[0]
				if !pt.Info.ControlOn {
					continue
				}
				on++
				for i, d := range pt.DLoss {
					// Tolerance: Δθ is a difference of float32 parameters
					// of size ≈ 1, each rounded by up to 2⁻²⁴, seen
					// through ∇ℓ_i (for quad ‖∇ℓ_i‖ = √(2ℓ_i)).
					tol := 1e-6*math.Abs(st.LR*pt.Info.Phi) + 0x1p-23*math.Sqrt(2*pt.Losses[i])*math.Sqrt2
					if bound := -st.LR * pt.Info.Phi; d > bound+tol {
						t.Fatalf("step %d: task %d changes by %g, PNG promises ≤ %g", st.Step, i, d, bound)
					}
				}
			}
			if on == 0 {
				t.Error("the control was never on: the test does not exercise the dual")
			}
			wantTerms := 0
			if tc.terms {
				wantTerms = 1
				if len(res.Points[0].Terms) != 1 {
					t.Fatalf("result terms %v, want one value", res.Points[0].Terms)
				}
			}
			if last := steps.steps[len(steps.steps)-1].Points[0]; len(last.Terms) != wantTerms {
				t.Errorf("step terms %v, want %d values", last.Terms, wantTerms)
			}
			if strings.Contains(tc.expr, "drift") {
				d := 0.0
				for j, v := range res.Points[0].Params {
					d += math.Pow(float64(v)-float64(tc.init[j]), 2)
				}
				if math.Abs(res.Points[0].Drift-d) > 1e-9 {
					t.Errorf("result drift %g, want ‖θ − θ₀‖² = %g", res.Points[0].Drift, d)
				}
			}
		})
	}
}

// stepLog keeps a copy of every step.
type stepLog struct{ steps []finetune.Step }

func (l *stepLog) Init(*finetune.Config) error { return nil }
func (l *stepLog) Record(st *finetune.Step) error {
	c := *st
	c.Points = nil
	for _, p := range st.Points {
		p.Losses, p.Terms, p.DLoss = slices.Clone(p.Losses), slices.Clone(p.Terms), slices.Clone(p.DLoss)
		c.Points = append(c.Points, p)
	}
	l.steps = append(l.steps, c)
	return nil
}
func (l *stepLog) Done(*finetune.Result) error { return nil }

// TestTermsErrors: a criterion that reads a name that is neither a task,
// a term of the problem nor drift is refused before the first step.
func TestTermsErrors(t *testing.T) {
	q := &termQuad{quad: newQuad(0, 0), p: []float64{0, 0}}
	for _, tc := range []struct {
		p    finetune.Problem
		expr string
		msg  string
	}{
		{newQuad(0, 0), "a + pull", `reads "pull", which is neither a task, a term nor drift (the problem has no terms)`},
		{q, "a + push", `reads "push", which is neither a task, a term nor drift (the problem's terms are pull)`},
	} {
		crit, err := criterion.Parse(tc.expr, []string{"a", "b"}, "pull", "push")
		if err != nil {
			t.Fatal(err)
		}
		s := finetune.Settings{Criterion: crit, Steps: 1}
		if _, err := finetune.Run(context.Background(), tc.p, nil, nil, &s, nil); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an error containing %q", tc.expr, err, tc.msg)
		}
	}
	if q.calls != 0 {
		t.Errorf("EvaluateTerms ran %d times before the refusal", q.calls)
	}
}

// TestTermsLogged checks the JSON-lines log and the CSV trace show the
// terms and drift beside the task losses.
func TestTermsLogged(t *testing.T) {
	crit, err := criterion.Parse("a + pull + 0.5*drift", []string{"a", "b"}, "pull")
	if err != nil {
		t.Fatal(err)
	}
	var jl, cs bytes.Buffer
	s := finetune.Settings{Criterion: crit, LR: 0.1, Steps: 2}
	q := &termQuad{quad: newQuad(0, 0), p: []float64{0, 2}}
	if _, err := finetune.Run(context.Background(), q, nil, nil, &s, finetune.Multi(finetune.NewJSONLRecorder(&jl), finetune.NewCSVRecorder(&cs))); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(jl.String()), "\n")
	var cfg struct {
		Terms []string `json:"terms"`
		Drift bool     `json:"drift"`
	}
	var step1, step2 struct {
		Terms map[string]float64 `json:"terms"`
		Drift *float64           `json:"drift"`
	}
	for i, v := range []any{&cfg, &step1, &step2} {
		if err := json.Unmarshal([]byte(lines[i]), v); err != nil {
			t.Fatal(err)
		}
	}
	// At θ = (0, 0): pull = ½‖(0, −2)‖² = 2, drift = 0.
	if !slices.Equal(cfg.Terms, []string{"pull"}) || !cfg.Drift {
		t.Errorf("config terms %v drift %v, want [pull] true", cfg.Terms, cfg.Drift)
	}
	if step1.Terms["pull"] != 2 || step1.Drift == nil || *step1.Drift != 0 {
		t.Errorf("step 1 terms %v drift %v, want pull 2, drift 0", step1.Terms, step1.Drift)
	}
	if step2.Drift == nil || *step2.Drift <= 0 {
		t.Errorf("step 2 drift %v, want > 0 after one step", step2.Drift)
	}
	head := strings.SplitN(cs.String(), "\n", 2)[0]
	if !strings.HasPrefix(head, "step,a,b,pull,drift,F,") {
		t.Errorf("CSV header %q, want step,a,b,pull,drift,F,...", head)
	}
}

// TestResumeWithDriftBitExact interrupts a run whose criterion reads drift
// and a term, resumes it on a problem that starts elsewhere, and checks it
// ends where the uninterrupted run does: θ₀ travels in the checkpoint.
func TestResumeWithDriftBitExact(t *testing.T) {
	crit, err := criterion.Parse("pull + 0.3*drift + a", []string{"a", "b"}, "pull")
	if err != nil {
		t.Fatal(err)
	}
	newP := func(init ...float32) *termQuad { return &termQuad{quad: newQuad(init...), p: []float64{0.5, 3}} }
	s := finetune.Settings{Optimizer: "adam", LR: 0.01, Steps: 30, Criterion: crit}
	s.CheckpointPath = filepath.Join(t.TempDir(), "uninterrupted.ckpt")
	want, err := finetune.Run(context.Background(), newP(-0.4, 0.8), nil, nil, &s, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.CheckpointPath = filepath.Join(t.TempDir(), "run.ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = finetune.Run(ctx, newP(-0.4, 0.8), nil, nil, &s, cancelAt{11, cancel})
	var ie *finetune.InterruptedError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v, want an *InterruptedError", err)
	}
	got, err := finetune.Resume(context.Background(), s.CheckpointPath, newP(7, 7), nil, nil, &s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Points[0].Params, want.Points[0].Params) || got.Points[0].Drift != want.Points[0].Drift {
		t.Errorf("resumed run ends at %v (drift %v), uninterrupted at %v (drift %v)",
			got.Points[0].Params, got.Points[0].Drift, want.Points[0].Params, want.Points[0].Drift)
	}
	// A checkpoint without θ₀ cannot resume a criterion that reads drift.
	s2 := s
	s2.Criterion = nil
	s2.CheckpointPath = filepath.Join(t.TempDir(), "nodrift.ckpt")
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	if _, err := finetune.Run(ctx2, newP(-0.4, 0.8), nil, nil, &s2, cancelAt{3, cancel2}); !errors.As(err, &ie) {
		t.Fatalf("error %v, want an *InterruptedError", err)
	}
	if _, err := finetune.Resume(context.Background(), s2.CheckpointPath, newP(0, 0), nil, nil, &s, nil); err == nil || !strings.Contains(err.Error(), "holds 0 start parameters") {
		t.Errorf("resume without θ₀: %v, want an error about the start parameters", err)
	}
}

// TestRunMultiPerModel spreads two models with the energy, alone and with
// a per-model drift penalty: the penalty keeps both closer to their starts,
// and the log's configuration names it.
func TestRunMultiPerModel(t *testing.T) {
	energy, pm, err := criterion.ParseMultiPoint("energy + 5*drift", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	drifts := map[bool]float64{}
	for _, withPM := range []bool{false, true} {
		s := finetune.Settings{Multi: energy, LR: 0.05, Steps: 200}
		if withPM {
			s.PerModel = pm
		}
		var jl bytes.Buffer
		res, err := finetune.RunMulti(context.Background(), []finetune.Problem{newQuad(0.1, 1), newQuad(-0.1, 1)}, nil, nil, &s, finetune.NewJSONLRecorder(&jl))
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			PerModel string `json:"per_model"`
			Drift    bool   `json:"drift"`
		}
		if err := json.Unmarshal(bytes.SplitN(jl.Bytes(), []byte("\n"), 2)[0], &cfg); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: "5 * drift"}[withPM]; cfg.PerModel != want || cfg.Drift != withPM {
			t.Errorf("per-model %v: config per_model %q drift %v, want %q %v", withPM, cfg.PerModel, cfg.Drift, want, withPM)
		}
		for k, p := range res.Points {
			start := []float64{0.1, -0.1}[k]
			d := math.Pow(float64(p.Params[0])-start, 2) + math.Pow(float64(p.Params[1])-1, 2)
			drifts[withPM] += d
			if withPM && math.Abs(p.Drift-d) > 1e-9 {
				t.Errorf("model %d: result drift %g, want %g", k, p.Drift, d)
			}
		}
	}
	t.Logf("total drift %g with the penalty, %g without", drifts[true], drifts[false])
	if !(drifts[true] < 0.5*drifts[false]) || drifts[false] == 0 {
		t.Errorf("total drift %g with the penalty, %g without; want the penalty to halve it at least", drifts[true], drifts[false])
	}
}

// exp2Pull is the paper's exp2 with one term, pull = ½‖θ − p‖².
type exp2Pull struct {
	*synthetic.Problem
	p []float64
}

func (q *exp2Pull) Terms() []string { return []string{"pull"} }

func (q *exp2Pull) EvaluateTerms(b finetune.Batch, losses, terms []float64, jac, tjac *png.Jacobian) error {
	if err := q.Evaluate(b, losses, jac); err != nil {
		return err
	}
	th := make([]float32, q.NumParams())
	q.Params(th)
	terms[0] = 0
	for j, v := range th {
		d := float64(v) - q.p[j]
		terms[0] += d * d / 2
		if tjac != nil {
			tjac.Row(0)[j] = float32(d)
		}
	}
	return nil
}

// TestExp2TermAndDrift: on exp2 (n = 10) the Pareto set is the segment
// θ = t·u, −1 ≤ t ≤ 1, u = (1, …, 1)/√10, where ℓ1 = 1 − exp(−(t−1)²) and
// ℓ2 = 1 − exp(−(t+1)²). Starting at θ₀ = −0.5·u, "l1 + drift" is least on
// the set where (t−1)·exp(−(t−1)²) + (t + 0.5) = 0, t* = −0.22831620;
// with p = 0.4·u, "l2 + pull" where 2(t+1)·exp(−(t+1)²) + (t − 0.4) = 0,
// t* = −0.42583697 (roots by bisection, unique on [−1, 1]). PNG ends there
// to float32 precision.
func TestExp2TermAndDrift(t *testing.T) {
	u := 1 / math.Sqrt(10)
	for _, tc := range []struct {
		expr  string
		tStar float64
	}{
		{"l1 + drift", -0.22831620482414255},
		{"l2 + pull", -0.4258369670982959},
	} {
		p := synthetic.Exp2()
		th0, pull := make([]float32, 10), make([]float64, 10)
		for j := range th0 {
			th0[j], pull[j] = float32(-0.5*u), 0.4*u
		}
		if err := p.SetParams(th0); err != nil {
			t.Fatal(err)
		}
		crit, err := criterion.Parse(tc.expr, p.Tasks(), "pull")
		if err != nil {
			t.Fatal(err)
		}
		s := finetune.Settings{Method: png.PNG{Settings: png.Settings{Gamma: 0.01}}, Criterion: crit, LR: 0.2, LRSchedule: "cosine", Steps: 1000}
		res, err := finetune.Run(context.Background(), &exp2Pull{Problem: p, p: pull}, nil, nil, &s, nil)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range res.Points[0].Params {
			if math.Abs(float64(v)-tc.tStar*u) > 1e-5 {
				t.Errorf("%s: θ[%d] = %.7f, want t*·u_j = %.7f", tc.expr, j, v, tc.tStar*u)
				break
			}
		}
	}
}
