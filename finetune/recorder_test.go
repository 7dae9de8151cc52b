package finetune_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/png"
)

func TestJSONLRecorder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		models int
	}{{"one model", 1}, {"three models", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			ps := make([]finetune.Problem, tc.models)
			for k := range ps {
				ps[k] = newQuad(float32(k), 2)
			}
			s := finetune.Settings{Method: gd{}, Criterion: weighted{1, 1}, LR: 0.1, Steps: 4, Meta: map[string]any{"problem": "quad"}}
			if _, err := finetune.RunMulti(context.Background(), ps, nil, nil, &s, finetune.NewJSONLRecorder(&buf)); err != nil {
				t.Fatal(err)
			}
			var lines []map[string]any
			sc := bufio.NewScanner(&buf)
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("line %d is not JSON: %v\n%s", len(lines)+1, err, sc.Text())
				}
				lines = append(lines, m)
			}
			if len(lines) != 1+4+1 {
				t.Fatalf("%d lines, want config + 4 steps + result", len(lines))
			}
			cfg := lines[0]
			if cfg["kind"] != "config" || cfg["optimizer"] != "sgd" || cfg["lr"] != 0.1 || cfg["models"] != float64(tc.models) ||
				cfg["meta"].(map[string]any)["problem"] != "quad" {
				t.Errorf("config line %v", cfg)
			}
			for i, st := range lines[1:5] {
				if st["step"] != float64(i+1) || st["lr"] != 0.1 {
					t.Errorf("step line %d: %v", i+1, st)
				}
				pt := st
				if tc.models > 1 {
					pt = st["models"].([]any)[tc.models-1].(map[string]any)
				}
				losses := pt["losses"].(map[string]any)
				if _, ok := losses["a"].(float64); !ok || pt["g"] == nil || pt["control"] == nil || pt["vnorm"] == nil {
					t.Errorf("step line %d: model fields %v", i+1, pt)
				}
				if i == 0 {
					// θ = (k, 2) before step 1, ∇ℓ_a = θ − (1, 1),
					// ∇ℓ_b = θ − (−1, 1), v = ∇ℓ_a + ∇ℓ_b, Δθ = −0.1·v.
					k := float64(tc.models - 1)
					want := map[string]float64{"a": -0.1 * (2*k*(k-1) + 2), "b": -0.1 * (2*k*(k+1) + 2)}
					dl, _ := pt["dloss"].(map[string]any)
					for task, w := range want {
						if got, ok := dl[task].(float64); !ok || math.Abs(got-w) > 1e-6 {
							t.Errorf("step 1: dloss[%s] = %v, want ∇ℓᵀΔθ = %g", task, dl[task], w)
						}
					}
				}
			}
			if res := lines[5]; res["kind"] != "result" || res["status"] != "StepLimit" || res["steps"] != 4.0 {
				t.Errorf("result line %v", res)
			}
		})
	}
}

// TestJSONLConfigMethod checks the method part of the configuration
// line: a name and the method's parameters with defaults resolved, never
// a Go struct with zero fields.
func TestJSONLConfigMethod(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method png.Method
		want   string
	}{
		{"png defaults", png.PNG{}, `"method":"png","alpha":0.5,"gamma":0.1,"discount":0.9,"criterion"`},
		{"png set", &png.PNG{Settings: png.Settings{Alpha: -1, Gamma: 0.01, Discount: 0.5, Workers: 1}},
			`"method":"png","alpha":-1,"gamma":0.01,"discount":0.5,"criterion"`},
		{"mgd", png.MGD{}, `"method":"mgd","criterion"`},
		{"linear default", png.Linear{}, `"method":"linear","weights":[0.5,0.5],"criterion"`},
		{"linear weights", png.Linear{Weights: []float64{0.25, 0.75}}, `"method":"linear","weights":[0.25,0.75],"criterion"`},
		{"other", gd{}, `"method":"finetune_test.gd{}","criterion"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := finetune.Settings{Method: tc.method, Criterion: weighted{1, 1}, LR: 0.1, Steps: 1}
			if _, err := finetune.Run(context.Background(), newQuad(1, 2), nil, nil, &s, finetune.NewJSONLRecorder(&buf)); err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(buf.String(), "\n")
			if !strings.Contains(first, tc.want) {
				t.Errorf("config line\n%s\nwant it to contain\n%s", first, tc.want)
			}
		})
	}
}

func TestCSVRecorder(t *testing.T) {
	var buf bytes.Buffer
	s := finetune.Settings{Method: gd{}, LR: 0.1, Steps: 3}
	if _, err := finetune.Run(context.Background(), newQuad(1, 2), nil, nil, &s, finetune.NewCSVRecorder(&buf)); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := "step,a,b,F,g,e,control,vnorm,lr,seconds"
	if len(rows) != 4 || strings.Join(rows[0], ",") != head || rows[3][0] != "3" {
		t.Errorf("CSV %v, want header %s and 3 rows", rows, head)
	}
}

func TestProgressPlain(t *testing.T) {
	var buf bytes.Buffer
	p := finetune.NewProgress(&buf)
	p.Interval = time.Hour // only the last step prints
	s := finetune.Settings{Method: gd{}, LR: 0.1, Steps: 50}
	if _, err := finetune.Run(context.Background(), newQuad(1, 2), nil, nil, &s, p); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if p.Terminal || !strings.HasPrefix(out, "step 50/50 ETA") || !strings.Contains(out, "stopped after 50 steps") || strings.Contains(out, "\r") {
		t.Errorf("progress output %q", out)
	}
	// Without training data F is exact, not a batch's.
	if !strings.Contains(out, " F=") || strings.Contains(out, "batch F") {
		t.Errorf("progress output %q: want F labelled plain F without training data", out)
	}
}

// TestProgressBatchF: with training data the progress line's F is the last
// batch's, and says so.
func TestProgressBatchF(t *testing.T) {
	var buf bytes.Buffer
	p := finetune.NewProgress(&buf)
	p.Interval = time.Hour // only the last step prints
	s := finetune.Settings{Method: gd{}, LR: 0.05, Steps: 4, BatchSize: 5, Seed: 1}
	if _, err := finetune.Run(context.Background(), &regression{theta: []float32{1, -1, 2}}, regressionData(10), nil, &s, p); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "step 4/4 ETA") || strings.Count(out, "batch F=") != 2 {
		t.Errorf("progress output %q: want the last step's line and the status line, each with batch F=", out)
	}
}

// TestJSONLMetricInexact checks that a step whose bounded update was not
// solved exactly (png.MetricInfo.Inexact) says so in its metric object,
// and that an exact one carries no such field.
func TestJSONLMetricInexact(t *testing.T) {
	for _, tc := range []struct {
		inexact bool
		want    any
	}{{true, true}, {false, nil}} {
		var buf bytes.Buffer
		r := finetune.NewJSONLRecorder(&buf)
		if err := r.Init(&finetune.Config{Tasks: []string{"a", "b"}}); err != nil {
			t.Fatal(err)
		}
		buf.Reset()
		st := &finetune.Step{Step: 1, Points: []finetune.Point{{Losses: []float64{1, 2},
			Metric: &png.MetricInfo{G: 1, Scale: 1, Phi: 0.5, Lambda: []float64{0.1, 0}, Clipped: 3, Inexact: tc.inexact}}}}
		if err := r.Record(st); err != nil {
			t.Fatal(err)
		}
		var line struct {
			Metric map[string]any `json:"metric"`
		}
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("%v\n%s", err, buf.Bytes())
		}
		if got := line.Metric["inexact"]; got != tc.want || line.Metric["clipped"] != 3.0 {
			t.Errorf("Inexact %v: metric %v, want inexact %v", tc.inexact, line.Metric, tc.want)
		}
	}
}

// slowMethod is gd whose direction takes at least pause.
type slowMethod struct{ pause time.Duration }

func (m slowMethod) Direction(dst []float32, J png.Jacobian, grad png.Gradient, st *png.State) (png.Info, error) {
	time.Sleep(m.pause)
	return gd{}.Direction(dst, J, grad, st)
}

// TestJSONLDirectionTime checks that every step line carries the time
// its direction took ("direction_ms", Step.Direction): a method that
// sleeps 20 ms shows at least that, and no more than the step's share of
// the run's time.
func TestJSONLDirectionTime(t *testing.T) {
	const pause = 20 * time.Millisecond
	var buf bytes.Buffer
	var dirs []time.Duration
	s := finetune.Settings{Method: slowMethod{pause}, Criterion: weighted{1, 1}, LR: 0.1, Steps: 3}
	rec := finetune.Multi(finetune.NewJSONLRecorder(&buf), recorderFunc(func(st *finetune.Step) error { dirs = append(dirs, st.Direction); return nil }))
	if _, err := finetune.Run(context.Background(), newQuad(0, 2), nil, nil, &s, rec); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	n := 0
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if _, ok := line["step"]; !ok {
			continue
		}
		n++
		ms, ok := line["direction_ms"].(float64)
		if !ok || ms < float64(pause.Milliseconds()) || ms > 1000*line["seconds"].(float64) {
			t.Errorf("step %v: direction_ms %v, want ≥ %d and ≤ the run's %v s", line["step"], line["direction_ms"], pause.Milliseconds(), line["seconds"])
		}
	}
	if n != 3 || len(dirs) != 3 {
		t.Fatalf("%d step lines, %d steps recorded, want 3", n, len(dirs))
	}
	for i, d := range dirs {
		if d < pause {
			t.Errorf("step %d: Step.Direction %v, want ≥ %v", i+1, d, pause)
		}
	}
}
