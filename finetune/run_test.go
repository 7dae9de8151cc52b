package finetune_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/png"
)

const convTol = 1e-4

func TestRunConverges(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    finetune.Settings
		want []float32 // minimiser of w0·a + w1·b: w0·c0 + w1·c1
	}{
		{"sgd", finetune.Settings{LR: 0.1, Steps: 300}, []float32{0.5, 1}},
		{"momentum", finetune.Settings{LR: 0.05, Momentum: 0.9, Steps: 400}, []float32{0.5, 1}},
		{"adam", finetune.Settings{Optimizer: "adam", LR: 0.02, Steps: 2000}, []float32{0.5, 1}},
		{"cosine", finetune.Settings{LR: 0.1, LRSchedule: "cosine", Steps: 400}, []float32{0.5, 1}},
		{"step", finetune.Settings{LR: 0.1, LRSchedule: "step", Steps: 600}, []float32{0.5, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQuad(3, -2)
			s := tc.s
			s.Method, s.Criterion = gd{}, weighted{0.75, 0.25}
			res, err := finetune.Run(context.Background(), q, nil, nil, &s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != finetune.StepLimit || res.Steps != s.Steps {
				t.Errorf("status %v after %d steps, want StepLimit after %d", res.Status, res.Steps, s.Steps)
			}
			for j, w := range tc.want {
				if got := res.Points[0].Params[j]; math.Abs(float64(got-w)) > convTol {
					t.Errorf("θ[%d] = %v, want %v", j, got, w)
				}
			}
			if res.G() > 1e-8 || res.F >= res.InitialF {
				t.Errorf("final g = %g (want ≈ 0), F = %g from %g", res.G(), res.F, res.InitialF)
			}
			wantL := []float64{0.5 * (0.25 + 0), 0.5 * (2.25 + 0)}
			for i, l := range res.Losses() {
				if math.Abs(l-wantL[i]) > convTol {
					t.Errorf("loss %d = %g, want %g", i, l, wantL[i])
				}
			}
		})
	}
}

func TestRunWithData(t *testing.T) {
	data := regressionData(40)
	r := &regression{theta: make([]float32, 3)}
	s := finetune.Settings{Method: gd{}, LR: 0.1, Epochs: 60, BatchSize: 8, Seed: 3, ValEvery: 50}
	res, err := finetune.Run(context.Background(), r, data, data, &s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 60*5 {
		t.Errorf("%d steps, want 60 epochs × 5 batches = 300", res.Steps)
	}
	// F = mean (x·θ − y0)² + mean (x·θ − y1)² is minimised at θ = (½, ½, ½)
	// where x·θ = (y0+y1)/2 exactly, leaving ½·mean (y0 − y1)².
	for j, v := range res.Points[0].Params {
		if math.Abs(float64(v)-0.5) > 1e-3 {
			t.Errorf("θ[%d] = %v, want 0.5", j, v)
		}
	}
	var want float64
	y0, y1 := data.Arrays["y0"].F32, data.Arrays["y1"].F32
	for e := range y0 {
		d := float64(y0[e]) - float64(y1[e])
		want += d * d / 2 / float64(len(y0))
	}
	if v := res.Points[0].ValLosses; v == nil || math.Abs(v[0]+v[1]-want) > 1e-4 {
		t.Errorf("validation losses %v (sum %g), want the sum ½·mean (y0 − y1)² = %g", v, v[0]+v[1], want)
	}
}

func TestRunNonFinite(t *testing.T) {
	for _, tc := range []struct {
		name     string
		q        *quad
		lr       float64
		retries  int
		wantStep int // 0: the run must succeed
		wantRetr int
	}{
		// θ jumps from 0 to 15 with lr 3 and is NaN beyond 10: one halving cures it.
		{"diverging step is retried", func() *quad { q := newQuad(0, 0); q.centers[0][0] = 5; q.bound = 10; return q }(), 3, 0, 0, 0},
		{"one NaN evaluation is retried", func() *quad { q := newQuad(3, -2); q.nanAt = map[int]bool{4: true}; return q }(), 0.1, 0, 0, 0},
		{"persistent NaN fails after retries", func() *quad { q := newQuad(3, -2); q.nanFrom = 4; return q }(), 0.1, 2, 4, 2},
		{"NaN at the start fails at once", func() *quad { q := newQuad(3, -2); q.nanFrom = 1; return q }(), 0.1, 0, 1, 0},
		{"no retries allowed", func() *quad { q := newQuad(3, -2); q.nanAt = map[int]bool{3: true}; return q }(), 0.1, -1, 3, 0},
		{"NaN reported as an error is retried", func() *quad {
			q := newQuad(3, -2)
			q.nanAt, q.nanAsError = map[int]bool{4: true}, true
			return q
		}(), 0.1, 0, 0, 0},
		{"NaN reported as errors fails after retries", func() *quad { q := newQuad(3, -2); q.nanFrom, q.nanAsError = 4, true; return q }(), 0.1, 2, 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := finetune.Settings{Method: gd{}, Criterion: weighted{1, 0}, LR: tc.lr, Steps: 20, MaxRetries: tc.retries}
			res, err := finetune.Run(context.Background(), tc.q, nil, nil, &s, nil)
			if tc.wantStep == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != finetune.StepLimit || !finiteAll(res.Losses()) {
					t.Errorf("status %v, losses %v", res.Status, res.Losses())
				}
				return
			}
			var nf *finetune.NonFiniteError
			if !errors.As(err, &nf) || !errors.Is(err, finetune.ErrNonFinite) {
				t.Fatalf("error %v, want a *NonFiniteError", err)
			}
			if nf.Step != tc.wantStep || nf.Retries != tc.wantRetr || nf.What != "loss" {
				t.Errorf("error at step %d after %d retries (%s), want step %d after %d retries (loss): %v",
					nf.Step, nf.Retries, nf.What, tc.wantStep, tc.wantRetr, err)
			}
			if res == nil || res.Status != finetune.Failed {
				t.Errorf("result %+v, want status Failed", res)
			}
		})
	}
}

// TestRunDiverged checks the divergence test: a loss above
// ℓ_i(0) + ρ·max_j |ℓ_j(0)| rolls the step back like a non-finite one;
// when it persists the run fails with a *DivergedError naming the model,
// task and step, and a Failed result.
func TestRunDiverged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		blowAt    map[int]bool // evaluation (1-based) of model blowModel
		blowFrom  int
		blowModel int
		factor    float64
		wantStep  int // 0: the run must succeed
	}{
		{"one blown-up evaluation is rolled back", map[int]bool{4: true}, 0, 0, 0, 0},
		{"persistent rise fails after retries", nil, 4, 0, 0, 4},
		{"the model that diverged is named", nil, 6, 1, 0, 6},
		{"a negative factor turns the test off", nil, 4, 0, -1, 0},
		{"a large factor tolerates the rise", nil, 4, 0, 1e6, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qs := []*quad{newQuad(3, -2), newQuad(2, -1)}
			qs[tc.blowModel].blowAt, qs[tc.blowModel].blowFrom = tc.blowAt, tc.blowFrom
			s := finetune.Settings{Method: gd{}, Criterion: weighted{1, 1}, LR: 0.01, Steps: 20, MaxRetries: 2, DivergeFactor: tc.factor}
			res, err := finetune.RunMulti(context.Background(), []finetune.Problem{qs[0], qs[1]}, nil, nil, &s, nil)
			if tc.wantStep == 0 {
				if err != nil || res.Status != finetune.StepLimit {
					t.Fatalf("status %v, error %v; want StepLimit", res.Status, err)
				}
				return
			}
			var d *finetune.DivergedError
			if !errors.As(err, &d) || !errors.Is(err, finetune.ErrDiverged) {
				t.Fatalf("error %v, want a *DivergedError", err)
			}
			if d.Step != tc.wantStep || d.Model != tc.blowModel || d.Retries != 2 || d.Task != "a" || !(d.Loss > d.Bound) {
				t.Errorf("%+v: want step %d, model %d, task a, 2 retries, loss > bound", *d, tc.wantStep, tc.blowModel)
			}
			for _, part := range []string{fmt.Sprintf("step %d", tc.wantStep), fmt.Sprintf("model %d diverged", tc.blowModel), "loss a"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("message %q does not say %q", err, part)
				}
			}
			if res == nil || res.Status != finetune.Failed {
				t.Errorf("result %+v, want status Failed", res)
			}
		})
	}
}

func TestRunRetryHalvesLR(t *testing.T) {
	q := newQuad(0, 0)
	q.centers[0][0], q.bound = 5, 10
	var lrs []float64
	rec := recorderFunc(func(st *finetune.Step) error { lrs = append(lrs, st.LR); return nil })
	s := finetune.Settings{Method: gd{}, Criterion: weighted{1, 0}, LR: 3, Steps: 3}
	if _, err := finetune.Run(context.Background(), q, nil, nil, &s, rec); err != nil {
		t.Fatal(err)
	}
	// Step 1's update (lr 3) overshoots; step 2 rolls it back and redoes it
	// with lr 1.5, which stays for the rest of the run.
	want := []float64{3, 1.5, 1.5}
	for i := range want {
		if lrs[i] != want[i] {
			t.Fatalf("learning rates %v, want %v", lrs, want)
		}
	}
}

func TestRunSettingsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    finetune.Settings
	}{
		{"negative momentum", finetune.Settings{Momentum: -0.5}},
		{"optimizer", finetune.Settings{Method: gd{}, Optimizer: "rmsprop"}},
		{"schedule", finetune.Settings{Method: gd{}, LRSchedule: "linear"}},
		{"negative lr", finetune.Settings{Method: gd{}, LR: -1}},
		{"checkpoint without path", finetune.Settings{Method: gd{}, CheckpointEvery: 5}},
		{"criterion tasks", finetune.Settings{Method: gd{}, Criterion: otherTasks{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := finetune.Run(context.Background(), newQuad(1, 1), nil, nil, &tc.s, nil); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestRunMulti(t *testing.T) {
	// Three independent points, each driven by its own weighted criterion
	// (the sum): all reach the same minimiser.
	ps := []finetune.Problem{newQuad(3, -2), newQuad(-1, 4), newQuad(0, 0)}
	s := finetune.Settings{Method: gd{}, Criterion: weighted{0.5, 0.5}, LR: 0.1, Steps: 300, Workers: 2}
	res, err := finetune.RunMulti(context.Background(), ps, nil, nil, &s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 3 {
		t.Fatalf("%d points, want 3", len(res.Points))
	}
	for k, p := range res.Points {
		if math.Abs(float64(p.Params[0])) > convTol || math.Abs(float64(p.Params[1])-1) > convTol {
			t.Errorf("model %d at %v, want (0, 1)", k, p.Params)
		}
	}
	if math.Abs(res.F-3*1.0/2) > convTol {
		t.Errorf("F = %g, want 3 × ½ = 1.5", res.F)
	}
}

type otherTasks struct{ weighted }

func (otherTasks) Tasks() []string { return []string{"b", "a"} }

type recorderFunc func(*finetune.Step) error

func (recorderFunc) Init(*finetune.Config) error      { return nil }
func (f recorderFunc) Record(st *finetune.Step) error { return f(st) }
func (recorderFunc) Done(*finetune.Result) error      { return nil }

func finiteAll(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// shifted is quad with its losses shifted by off: a negative offset makes
// a task loss negative at the start.
type shifted struct {
	*quad
	off []float64
}

func (s shifted) Evaluate(b finetune.Batch, losses []float64, jac *png.Jacobian) error {
	err := s.quad.Evaluate(b, losses, jac)
	for i := range losses {
		losses[i] += s.off[i]
	}
	return err
}

// TestRunNegativeLoss: a task loss below zero on the first batch fails the
// run before its first step, naming the task (and the model for several).
func TestRunNegativeLoss(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ps    []finetune.Problem
		multi bool
		want  string
	}{
		{"run", []finetune.Problem{shifted{newQuad(3, -2), []float64{0, -20}}}, false, "task b: loss -7.5"},
		{"multi", []finetune.Problem{newQuad(3, -2), shifted{newQuad(3, -2), []float64{-20, 0}}}, true, "model 2, task a: loss -13.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := 0
			rec := recorderFunc(func(*finetune.Step) error { steps++; return nil })
			s := finetune.Settings{Method: gd{}, Criterion: weighted{0.5, 0.5}, LR: 0.1, Steps: 5}
			var err error
			if tc.multi {
				_, err = finetune.RunMulti(context.Background(), tc.ps, nil, nil, &s, rec)
			} else {
				_, err = finetune.Run(context.Background(), tc.ps[0], nil, nil, &s, rec)
			}
			var ne *finetune.NegativeLossError
			if !errors.As(err, &ne) || !errors.Is(err, finetune.ErrNegativeLoss) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v (%T), want a NegativeLossError containing %q", err, err, tc.want)
			}
			if steps != 0 {
				t.Errorf("%d steps recorded before the error, want 0", steps)
			}
		})
	}
}
