package job

import (
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/png/criterion"
)

// segmentGram is K = J Jᵀ of ℓ_p = ½‖w − (0,0)‖² and ℓ_q = ½‖w − (2,0)‖²
// at w = (s, 0), on the segment between their minima (the Pareto set):
// ∇ℓ_p = (s, 0) and ∇ℓ_q = (s − 2, 0) oppose each other.
func segmentGram(s float64) []float64 {
	return []float64{s * s, s * (s - 2), s * (s - 2), (s - 2) * (s - 2)}
}

// trace builds n steps of g and e with the flags each step gets from
// flag(i): "far" (control on, g > e), "improper" (control on, g ≤ e),
// "held" (improper, held still) or "" (control off, g ≤ e). Batch losses
// go linearly from first to last.
func trace(n int, flag func(i int) string, first, last []float64) stepTrace {
	var t stepTrace
	for i := 0; i < n; i++ {
		f := flag(i)
		g, e := 0.01, 1.0
		if f == "far" {
			g = 8 - 4*float64(i)/float64(max(n-1, 1)) // g/e from 8 down to 4
		}
		t.G, t.E, t.F = append(t.G, g), append(t.E, e), append(t.F, 0)
		t.Control = append(t.Control, f != "")
		t.Improper = append(t.Improper, f == "improper" || f == "held")
		t.Held = append(t.Held, f == "held")
		s := float64(i) / float64(max(n-1, 1))
		row := make([]float64, len(first))
		for k := range row {
			row[k] = first[k] + s*(last[k]-first[k])
		}
		t.Losses = append(t.Losses, row)
	}
	return t
}

func all(f string) func(int) string { return func(int) string { return f } }

// bounded marks every step of t as an update posed within Adam's step
// bound, with clipped(i) weights held at the bound at step i and the
// steps in inexact solved inexactly.
func bounded(t stepTrace, clipped func(i int) int, inexact ...int) stepTrace {
	for i := range t.G {
		t.Posed = append(t.Posed, true)
		t.Clipped = append(t.Clipped, clipped(i))
		t.Inexact = append(t.Inexact, slices.Contains(inexact, i))
	}
	return t
}

// TestExplain: what a run's summary says, from its steps and its
// measurements before and after: F that rose because a loss fell past its
// wd target (far from the front, or refused trades), or because
// validation disagreed with training; the control's reasons; a target
// beyond the front (held by the trade test, or F's gradient cancelled
// along the front) and F at its best on the front without a target.
func TestExplain(t *testing.T) {
	tasks := []string{"p", "q"}
	type check func(t *testing.T, ex *Explanation)
	lines := func(want ...string) check {
		return func(t *testing.T, ex *Explanation) {
			t.Helper()
			text := strings.Join(ex.Lines, "\n") + "\n" + strings.Join(ex.Try, "\n")
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("explanation lacks %q:\n%s", w, text)
				}
			}
		}
	}
	absent := func(bad ...string) check {
		return func(t *testing.T, ex *Explanation) {
			t.Helper()
			text := strings.Join(ex.Lines, "\n") + "\n" + strings.Join(ex.Try, "\n")
			for _, w := range bad {
				if strings.Contains(text, w) {
					t.Errorf("explanation has %q:\n%s", w, text)
				}
			}
		}
	}
	for _, tc := range []struct {
		name          string
		method        string
		crit          string
		before, after []float64
		gram          []float64
		trace         stepTrace
		measuredOn    string
		skip, resumed int
		checks        []check
	}{
		{
			name: "F rose: both losses fell past their wd targets, far from the front",
			crit: "wd:4.5,6", before: []float64{4.52, 6.12}, after: []float64{3.672, 5.272},
			trace: trace(30, all("far"), []float64{4.5, 6.1}, []float64{3.7, 5.3}),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					if ex.F == nil || !ex.F.Rose {
						t.Fatalf("F = %+v, want it risen", ex.F)
					}
					for i, want := range []float64{4.5, 6} {
						p := ex.F.Parts[i]
						if p.Cause != "past_target" || p.Target == nil || !near(float64(*p.Target), want, 1e-9) || !(p.DF > 0) {
							t.Errorf("part %s = %+v, want past its target %v with dF > 0", p.Name, p, want)
						}
					}
					if sum := float64(ex.F.Parts[0].DF + ex.F.Parts[1].DF); !near(sum, float64(ex.F.After-ex.F.Before), 1e-9) {
						t.Errorf("parts add to %v, F changed by %v", sum, ex.F.After-ex.F.Before)
					}
					c := ex.Control
					if c == nil || c.On != 30 || c.Far != 30 || c.Improper != 0 || !near(float64(c.GOverEFirst), 8, 1e-12) || !near(float64(c.GOverELast), 4, 1e-12) {
						t.Errorf("control = %+v, want on at 30 of 30 steps, all far, g/e 8 → 4", c)
					}
					if ex.Band == nil || ex.Band.Share != 0 || ex.Band.Counts != "g ≤ e" {
						t.Errorf("band = %+v, want 0 of the steps with g ≤ e", ex.Band)
					}
				},
				lines("in the Pareto band (g ≤ e) at 0% of the last 30 steps",
					"the control was on at 30 of 30 steps", "30 far from the Pareto front (g > e; g/e 8 at the first step, 4 at the last)",
					"F rose from 0.002489 to 0.2407 on the training data",
					"p fell 4.52 → 3.672", "below its target 4.5, which F counts as a cost", "below its target 6,",
					"why: the run was far from the Pareto front, where PNG lowers every loss (p, q included) before it descends F",
					"more steps", "a larger --gamma (now 0.1)", "--criterion wd:3.672,6", "--criterion wd:4.5,5.272"),
				absent("target is beyond"),
			},
		},
		{
			name: "F rose while Adam's step bound held the update at most steps",
			crit: "wd:4.5,6", before: []float64{4.52, 6.12}, after: []float64{3.672, 5.272},
			trace: bounded(trace(30, all("far"), []float64{4.5, 6.1}, []float64{3.7, 5.3}), func(i int) int {
				if i < 6 {
					return 0
				}
				return 100 + i
			}, 3, 20),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					if b := ex.Bound; b == nil || b.Steps != 30 || b.Posed != 30 || b.Held != 24 || b.MaxClipped != 129 || b.Inexact != 2 {
						t.Errorf("bound = %+v, want 24 of 30 steps held, at most 129 weights, 2 inexact", b)
					}
					for _, w := range []string{"F rose 0.002489 → 0.2407 (p past its target, q past its target)", "g ≤ e at 0% of the last 30 steps",
						"control on at 30 of 30 steps (30 far from the front)", "Adam's step bound held the update at 24 of 30 steps"} {
						if !strings.Contains(ex.Short, w) {
							t.Errorf("short %q lacks %q", ex.Short, w)
						}
					}
				},
				lines("Adam's step bound held the update at 24 of 30 steps (up to 129 weights at the bound)",
					"at 2 steps that update was not solved within the step's passes over the weights",
					"what held the step: Adam's step bound, at 24 of 30 steps", "--optimizer sgd, whose step has no per-weight bound"),
			},
		},
		{
			name: "Adam's step bound posed but never reached: not mentioned",
			crit: "wd:4.5,6", before: []float64{4.52, 6.12}, after: []float64{3.672, 5.272},
			trace: bounded(trace(30, all("far"), []float64{4.5, 6.1}, []float64{3.7, 5.3}), func(int) int { return 0 }),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					if ex.Bound != nil || strings.Contains(ex.Short, "bound") {
						t.Errorf("bound = %+v, short %q: want nothing said of a bound that held no weight", ex.Bound, ex.Short)
					}
				},
				absent("step bound", "--optimizer sgd"),
			},
		},
		{
			name: "Adam's step bound held a few steps of a run whose F fell: said, not blamed",
			crit: "p+q", before: []float64{4.52, 6.12}, after: []float64{3.672, 5.272},
			trace: bounded(trace(20, all("far"), []float64{4.5, 6.1}, []float64{3.7, 5.3}), func(i int) int {
				if i == 4 {
					return 7
				}
				return 0
			}),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					if b := ex.Bound; b == nil || b.Held != 1 || b.MaxClipped != 7 {
						t.Errorf("bound = %+v, want 1 step held, 7 weights", b)
					}
					if !strings.HasPrefix(ex.Short, "F fell 10.64 → 8.944; ") {
						t.Errorf("short %q: want it to start with F's fall", ex.Short)
					}
				},
				lines("Adam's step bound held the update at 1 of 20 steps (up to 7 weights at the bound)"),
				absent("what held the step", "--optimizer sgd"),
			},
		},
		{
			name: "far from the front, F fell: the control is explained, no rise",
			crit: "p+q", before: []float64{4.52, 6.12}, after: []float64{3.672, 5.272},
			trace: trace(20, func(i int) string {
				if i < 15 {
					return "far"
				}
				return ""
			}, []float64{4.5, 6.1}, []float64{3.7, 5.3}),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					if ex.F == nil || ex.F.Rose || ex.Control.On != 15 || ex.Control.Far != 15 {
						t.Errorf("F %+v, control %+v: want F fallen, the control on at 15 steps, all far", ex.F, ex.Control)
					}
				},
				lines("the control was on at 15 of 20 steps", "15 far from the Pareto front", "in the Pareto band (g ≤ e) at 25% of the last 20 steps"),
				absent("F rose", "why:"),
			},
		},
		{
			name: "F rose: every loss below its target, F's step refused as improper",
			crit: "wd:0.14,1.5", before: []float64{0.145, 1.55}, after: []float64{0.104, 1.392},
			trace: trace(30, func(i int) string {
				if i < 5 {
					return ""
				}
				return "improper"
			}, []float64{0.14, 1.7}, []float64{0.1, 1.4}),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					if c := ex.Control; c.Improper != 25 || c.Far != 0 || c.Held != 0 {
						t.Errorf("control = %+v, want 25 improper trades", c)
					}
				},
				lines("F rose", "p fell 0.145 → 0.104", "below its target 0.14", "25 improper trades (g ≤ e",
					"why: F's own step would have raised the losses (p, q included) more than it lowers them, an improper trade"),
			},
		},
		{
			name: "F rose on validation while the batches fell",
			crit: "p*q", before: []float64{0.5, 0.4}, after: []float64{0.6, 0.38}, measuredOn: "validation",
			trace: trace(40, all(""), []float64{0.45, 0.4}, []float64{0.3, 0.35}),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					if p := ex.F.Parts[0]; p.Cause != "rose" || len(p.Batch) != 2 || !(p.Batch[1] < p.Batch[0]) {
						t.Errorf("part p = %+v, want risen, its batch loss fallen", p)
					}
				},
				lines("F rose from 0.2 to 0.228 on the validation data", "p rose 0.5 → 0.6",
					"p rose on the validation data while it fell on the training batches", "--val-every"),
			},
		},
		{
			name:   "F rose with another method",
			method: "mgd", crit: "wd:4.5,6", before: []float64{4.52, 6.12}, after: []float64{3.672, 5.272},
			trace: trace(10, all(""), []float64{4.5, 6.1}, []float64{3.7, 5.3}),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					if ex.Band != nil || ex.Control != nil || ex.Front != nil {
						t.Errorf("band %+v, control %+v, front %+v: want none without PNG", ex.Band, ex.Control, ex.Front)
					}
				},
				lines("F rose", "why: --method mgd does not follow F's gradient"),
			},
		},
		{
			name: "target beyond the front: the trade test holds the run",
			crit: "wd:0.3,0.0001", before: []float64{1.125, 0.125}, after: []float64{1.653, 0.01652},
			gram: segmentGram(1.818),
			trace: trace(200, func(i int) string {
				if i < 54 {
					return ""
				}
				return "improper"
			}, []float64{1.1, 0.12}, []float64{1.65, 0.0165}),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					f := ex.Front
					if f == nil || !f.Beyond || f.Loss != "q" || f.Against != "p" || f.HeldBy != "improper_trades" || f.Target == nil || !near(float64(*f.Target), 0.0001, 1e-9) {
						t.Fatalf("front = %+v, want q's target 0.0001 beyond the front, held by the trade test", f)
					}
					// along the segment q falls as p rises s/(2−s) times as fast
					if !near(float64(f.Ratio), 1.818/(2-1.818), 1e-9) {
						t.Errorf("ratio %v, want %v", f.Ratio, 1.818/(2-1.818))
					}
					if f.Closest["p"] != 1.653 || f.Closest["q"] != 0.01652 {
						t.Errorf("closest %v, want the losses after", f.Closest)
					}
				},
				lines("the target is beyond the Pareto front: q's target 0.0001 is out of reach, q cannot go lower without raising p by 9.99× as much (PNG trades at most 10×)",
					"the closest point reached: p 1.653, q 0.01652", "a target the front can reach: q no lower than about 0.01652", "paretonav front"),
			},
		},
		{
			name: "target beyond the front: F's gradient cancelled along it",
			crit: "wd:0.1,0.1", before: []float64{0.125, 1.125}, after: []float64{0.5026, 0.4974},
			gram:  segmentGram(1.0026),
			trace: trace(100, all(""), []float64{0.125, 1.1}, []float64{0.5, 0.5}),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					f := ex.Front
					if f == nil || !f.Beyond || f.HeldBy != "front" || f.Target == nil || !near(float64(*f.Target), 0.1, 1e-9) {
						t.Fatalf("front = %+v, want a target 0.1 beyond the front, F cancelled there", f)
					}
					if !near(float64(f.Ratio), 1, 0.01) {
						t.Errorf("ratio %v, want about 1 (the segment's middle)", f.Ratio)
					}
				},
				lines("the control was off at all 100 steps", "the target is beyond the Pareto front:", "cannot go lower without raising", "the closest point reached"),
			},
		},
		{
			name: "a sum of the losses at its best on the front: no target",
			crit: "p+q", before: []float64{0.125, 1.125}, after: []float64{0.5039, 0.4961},
			gram:  segmentGram(1.0039),
			trace: trace(100, all(""), []float64{0.125, 1.1}, []float64{0.5, 0.5}),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					if f := ex.Front; f == nil || f.Beyond || f.Target != nil || f.HeldBy != "front" {
						t.Errorf("front = %+v, want F at its best on the front, no target", f)
					}
				},
				lines("F is as low as the Pareto front allows here", "the point reached: p 0.5039"),
				absent("beyond", "to try", "paretonav front"),
			},
		},
		{
			name: "off the front at the end: no front limit",
			crit: "wd:0.1,0.1", before: []float64{0.125, 1.125}, after: []float64{0.2, 0.9},
			gram:  []float64{2, 1, 1, 2},
			trace: trace(50, all("far"), []float64{0.125, 1.1}, []float64{0.2, 0.9}),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					if ex.Front != nil {
						t.Errorf("front = %+v, want none far from the front", ex.Front)
					}
				},
				absent("Pareto front allows", "beyond"),
			},
		},
		{
			name: "MGD's first steps left out; a resumed run counts its own steps",
			crit: "p+q", before: []float64{1, 1}, after: []float64{0.9, 0.9}, skip: 5, resumed: 3,
			trace: trace(20, func(i int) string {
				if i < 5 || i >= 15 {
					return "far" // the MGD steps' g > e is PNG's business no more than their control
				}
				return ""
			}, []float64{1, 1}, []float64{0.9, 0.9}),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					if ex.Control.Steps != 15 || ex.Control.On != 5 || ex.Band.Steps != 15 || !near(float64(ex.Band.Share), 10.0/15, 1e-12) {
						t.Errorf("control %+v, band %+v: want 15 PNG steps, 5 with the control on, 10 in the band", ex.Control, ex.Band)
					}
				},
				lines("in the Pareto band (g ≤ e) at 67% of the last 15 steps (after the first 5 steps, which followed MGD)",
					"the control was on at 5 of 15 steps since the run resumed after step 3"),
			},
		},
		{
			name: "F outside its domain: no F part",
			crit: "log(p)", before: []float64{0.5, 1}, after: []float64{0, 1},
			trace: trace(5, all(""), []float64{0.5, 1}, []float64{0.1, 1}),
			checks: []check{
				func(t *testing.T, ex *Explanation) {
					if ex.F != nil {
						t.Errorf("F = %+v, want none", ex.F)
					}
				},
				absent("F rose"),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crit, err := criterion.Parse(tc.crit, tasks)
			if err != nil {
				t.Fatal(err)
			}
			in := explainInput{Method: "png", Tasks: tasks, Crit: crit, CritText: tc.crit, Before: tc.before, After: tc.after,
				MeasuredOn: "training", Gram: tc.gram, Trace: tc.trace, Gamma: 0.1, MaxTradeoff: 10}
			if tc.method != "" {
				in.Method = tc.method
			}
			in.Skip, in.Resumed = tc.skip, tc.resumed
			if tc.measuredOn != "" {
				in.MeasuredOn = tc.measuredOn
			}
			ex := explain(in)
			for _, c := range tc.checks {
				c(t, ex)
			}
		})
	}
}

func near(a, b, tol float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	s := max(abs(a), abs(b), 1e-300)
	return d <= tol*s || d <= tol
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
