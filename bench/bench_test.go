package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/finetune/front"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models"
	"github.com/paretonav/paretonav/models/datasets"
	"github.com/paretonav/paretonav/png"
)

// paperCheckpoints are the ends of epochs 61 to 100 counted in phase-2
// steps of 469 (⌈120000/256⌉).
func paperCheckpoints() []int {
	var out []int
	for e := 1; e <= 40; e++ {
		out = append(out, 469*e)
	}
	return out
}

func TestBudgetArithmetic(t *testing.T) {
	for _, tc := range []struct {
		name          string
		modelSteps    int
		ablationSteps int
		scorings      int
		checkpoints   []int
		epochs        float64
		// estimates for all three datasets with 2 workers (0: not checked)
		estimate, ablation time.Duration
	}{
		// small: 5·300 + 4·5·75 = 3000 steps; per dataset and seed with 2
		// workers: phase 1, 5 jobs of 300 → 3 rounds, 900 steps' time;
		// phase 2, jobs 375, 375, 375 (mgd, epo, png) and 5 × 75 (linear)
		// → 750 each; scoring, 20 jobs of 3 checkpoints × 4 batches → 120
		// batches each. (900 + 750)·0.1 s + 120·0.035 s = 169.2 s, × 9.
		// Ablation: 4 more jobs of 375 (phase 2: 7·375 + 375 → 1500 each,
		// +750) and 20 more scorings (+120): (75 + 4.2) s × 3 seeds.
		{"small", 3000, 1500, 60, []int{25, 50, 75}, 4.6875,
			9 * 169200 * time.Millisecond, 3 * 79200 * time.Millisecond},
		// medium: 5·192 + 20·128 = 3520 steps; phase 1: 3·192 = 576;
		// phase 2: 640, 640, 640 and 5 × 128 → 1280; scoring: 20 jobs of
		// 8 checkpoints × 8 batches = 64 → 640 batches.
		// (576 + 1280)·0.1 + 640·0.035 = 208 s, × 15 = 52 min.
		// Ablation: phase 2, 7 × 640 and 5 × 128 → 2560 (+1280), scoring
		// 40 jobs of 64 → 1280 (+640): (128 + 22.4) s × 5 seeds = 752 s.
		{"medium", 3520, 2560, 160, []int{16, 32, 48, 64, 80, 96, 112, 128}, 10,
			15 * 208 * time.Second, 752 * time.Second},
		// paper: 5·28140 + 20·18760 = 515900 steps per dataset and seed;
		// 4·5·40 = 800 scorings, one per epoch of phase 2 (469 steps).
		{"paper", 515900, 4 * 5 * 18760, 800, paperCheckpoints(), 100.05333333333333, 0, 0},
		{"tiny", 50, 40, 40, []int{1, 2}, 1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Budgets[tc.name]
			if err := b.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := b.ModelSteps(); got != tc.modelSteps {
				t.Errorf("ModelSteps = %d, want %d", got, tc.modelSteps)
			}
			if got := b.AblationModelSteps(); got != tc.ablationSteps {
				t.Errorf("AblationModelSteps = %d, want %d", got, tc.ablationSteps)
			}
			if got := b.Scorings(); got != tc.scorings {
				t.Errorf("Scorings = %d, want %d", got, tc.scorings)
			}
			if got := b.CheckpointSteps(); !equalInts(got, tc.checkpoints) {
				t.Errorf("CheckpointSteps = %v, want %v", got, tc.checkpoints)
			}
			if got := b.Epochs(); math.Abs(got-tc.epochs) > 1e-9 {
				t.Errorf("Epochs = %v, want %v", got, tc.epochs)
			}
			if tc.estimate > 0 {
				if got := b.Estimate(3, 2); (got - tc.estimate).Abs() > time.Millisecond {
					t.Errorf("Estimate(3 datasets, 2 workers) = %v, want %v", got, tc.estimate)
				}
				if got := b.AblationEstimate(2); (got - tc.ablation).Abs() > time.Millisecond {
					t.Errorf("AblationEstimate(2 workers) = %v, want %v", got, tc.ablation)
				}
			}
		})
	}
	// The medium budget's promise: the three datasets and the ablation
	// within 90 minutes on two free cores even if a step costs 1.35× the
	// measured figure (the committed small run's 0.13 s per model-step).
	med := Budgets["medium"]
	if est := med.Estimate(3, 2) + med.AblationEstimate(2); time.Duration(1.35*float64(est)) > 90*time.Minute {
		t.Errorf("medium budget estimate %v (with the ablation) leaves no margin within 90 minutes", est)
	}
	// The paper's structure: phase 2 is the last 40% of training, its
	// last checkpoint at its end.
	if got := float64(med.Steps) / float64(med.WarmSteps+med.Steps); got != 0.4 {
		t.Errorf("medium: phase 2 is %v of training, want 0.4", got)
	}
	plan := med.Describe([]string{"multimnist", "multifashion", "fashionmnist"}, 2, "multimnist")
	for _, want := range []string{"8192 training and 2048 test pairs", "5 seeds", "10 epochs per model",
		"checkpoints at steps [16 32 48 64 80 96 112 128]", "expected duration ≈ 52m0s",
		"ablation on multimnist: png with α=0.25, γ=0.1; α=0.75, γ=0.1; α=0.5, γ=0.01; α=0.5, γ=0.25",
		"2560 more model-steps per seed", "ablation ≈ 12m32s more; in all ≈ 1h4m32s"} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
	if plan := med.Describe([]string{"multimnist"}, 2, ""); strings.Contains(plan, "ablation") {
		t.Errorf("plan without ablation mentions it:\n%s", plan)
	}
}

func TestMakespan(t *testing.T) {
	for _, tc := range []struct {
		sizes   []int
		workers int
		want    int
	}{
		{[]int{5, 5, 5, 5, 5}, 2, 15},          // 5 equal jobs: 3 rounds
		{[]int{1, 1, 1, 1, 1, 5, 5, 5}, 2, 10}, // largest first: 5+5 | 5+1·5
		{[]int{3, 3, 2, 2, 2}, 2, 7},           // the LPT schedule, not the optimum 6
		{[]int{4, 1}, 4, 4},
		{nil, 2, 0},
		{[]int{2, 3}, 0, 5}, // workers < 1 is one
	} {
		if got := makespan(tc.sizes, tc.workers); got != tc.want {
			t.Errorf("makespan(%v, %d) = %d, want %d", tc.sizes, tc.workers, got, tc.want)
		}
	}
}

func TestBudgetValidate(t *testing.T) {
	for _, b := range []Budget{
		{Name: "zero seeds", TrainExamples: 1, TestExamples: 1, WarmSteps: 1, Steps: 1, Checkpoints: 1, Batch: 1, Models: 1},
		{Name: "one seed", TrainExamples: 1, TestExamples: 1, Seeds: 1, WarmSteps: 1, Steps: 1, Checkpoints: 1, Batch: 1, Models: 1},
		{Name: "checkpoints", TrainExamples: 1, TestExamples: 1, Seeds: 2, WarmSteps: 1, Steps: 1, Checkpoints: 2, Batch: 1, Models: 1},
	} {
		if err := b.Validate(); err == nil {
			t.Errorf("budget %q: no error", b.Name)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fakeData composes MultiMNIST-like pairs from random "digits" whose ink
// density encodes the label.
func fakeData(_, split string, n int, seed int64) (map[string]*importer.Tensor, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(len(split))))
	set := func() *datasets.Set {
		const k = 40
		im := &datasets.Images{N: k, Rows: 28, Cols: 28, Pixels: make([]uint8, k*28*28)}
		labels := make([]uint8, k)
		for i := range k {
			labels[i] = uint8(rng.IntN(10))
			for p, px := 0, im.At(i); p < len(px); p++ {
				if rng.Float64() < 0.05+0.09*float64(labels[i]) {
					px[p] = 255
				}
			}
		}
		return &datasets.Set{Images: im, Labels: labels}
	}
	return datasets.Compose(set(), set(), n, seed)
}

// TestRunTiny runs the whole protocol at the tiny budget on fake data and
// checks the shape of the results and the table.
func TestRunTiny(t *testing.T) {
	b := Budgets["tiny"]
	res, err := Run(context.Background(), Config{Budget: b, Datasets: []string{"fake"}, Data: fakeData, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Seeds) != b.Seeds {
		t.Fatalf("%d seed results, want %d", len(res.Seeds), b.Seeds)
	}
	for _, sr := range res.Seeds {
		if want := len(Methods) * b.Models * b.Checkpoints; len(sr.Points) != want {
			t.Errorf("seed %d: %d scored checkpoints, want %d", sr.Seed, len(sr.Points), want)
		}
		for _, m := range Methods {
			v := sr.Metrics[m]
			if v == nil {
				t.Fatalf("seed %d: no metrics for %s", sr.Seed, m)
			}
			// Tiny models sit below the references (accuracy 0.6, loss 0.6), so
			// their hypervolumes may be 0; TestMeasureUnion checks the values.
			if !(v["hv_acc"] >= 0) || !(v["igd_loss"] >= 0) || !(v["igd_acc"] >= 0) || !(v["hv_loss"] >= 0) {
				t.Errorf("seed %d, %s: metrics %v", sr.Seed, m, v)
			}
		}
		for _, p := range sr.Points {
			for _, a := range p.Accuracies {
				if a < 0 || a > 1 {
					t.Errorf("accuracy %v outside [0, 1]", a)
				}
			}
		}
	}
	for _, m := range Methods {
		c := res.Table["fake"][m]["hv_acc"]
		if c == nil || len(c.Values) != b.Seeds {
			t.Fatalf("table cell fake/%s/hv_acc: %+v", m, c)
		}
		if (m == "png") != (c.VsPNG == nil) {
			t.Errorf("%s: t-test %v (want one for each baseline, none for png)", m, c.VsPNG)
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## fake", "| linear |", "| mgd |", "| epo |", "| png |", "Paired t-test", "HV loss ↑"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if _, err := json.Marshal(res.JSON()); err != nil {
		t.Errorf("results JSON: %v", err)
	}
}

// TestMeasureUnion: IGD+ is measured against the non-dominated union of
// all methods, so a method holding the whole union scores 0 and one that
// is dominated scores its distance.
func TestMeasureUnion(t *testing.T) {
	pts := []Point{
		{Method: "linear", Losses: []float64{0.2, 0.4}, Accuracies: []float64{0.9, 0.8}},
		{Method: "mgd", Losses: []float64{0.3, 0.5}, Accuracies: []float64{0.8, 0.7}},
		{Method: "png", Losses: []float64{0.2, 0.4}, Accuracies: []float64{0.9, 0.8}},
		{Method: "png", Losses: []float64{0.4, 0.1}, Accuracies: []float64{0.7, 0.95}},
	}
	m := measure(pts)
	const tol = 1e-12
	for _, tc := range []struct {
		method, metric string
		want           float64
	}{
		{"png", "igd_loss", 0},
		{"png", "hv_loss", 0.4*0.2 + 0.2*0.3},                         // union of [0.2,0.6]×[0.4,0.6] and [0.4,0.6]×[0.1,0.6]
		{"linear", "igd_loss", (0 + 0.3) / 2},                         // (0.4,0.1) is 0.3 away in ℓ2 from (0.2,0.4)
		{"mgd", "igd_loss", (0.1*1.4142135623730951 + 0.4) / 2},       // d⁺ to (0.2,0.4) and to (0.4,0.1)
		{"png", "hv_acc", (0.9-0.6)*(0.8-0.6) + (0.7-0.6)*(0.95-0.8)}, // accuracies above (0.6, 0.6)
		{"mgd", "hv_acc", (0.8 - 0.6) * (0.7 - 0.6)},
	} {
		if got := m[tc.method][tc.metric]; got-tc.want > tol || tc.want-got > tol {
			t.Errorf("%s %s = %v, want %v", tc.method, tc.metric, got, tc.want)
		}
	}
}

// TestRescoreRoundTrip writes a run's results as JSON, reads them back and
// rescores them: the checkpoints survive the round trip exactly, so every
// metric and the table come out as the run computed them, and the
// threshold cap is kept and stated in the Markdown.
func TestRescoreRoundTrip(t *testing.T) {
	if _, err := Run(context.Background(), Config{Budget: Budgets["tiny"], Datasets: []string{"fake"}, Data: fakeData, ThresholdCap: -1}); err == nil ||
		!strings.Contains(err.Error(), "ThresholdCap") {
		t.Errorf("ThresholdCap -1: %v, want an error naming it", err)
	}
	for _, bad := range []Config{{MaxTradeoff: -1}, {EnergyScale: "unit"}} {
		bad.Budget, bad.Datasets, bad.Data = Budgets["tiny"], []string{"fake"}, fakeData
		if _, err := Run(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "Config.") {
			t.Errorf("%+v: %v, want an error naming the field", bad, err)
		}
	}
	res, err := Run(context.Background(), Config{Budget: Budgets["tiny"], Datasets: []string{"fake"}, Data: fakeData, Workers: 2, ThresholdCap: 100,
		MaxTradeoff: 10, EnergyScale: "model", DataLayout: "sener", PaperUpdate: true})
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(res.JSON())
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadResults(js)
	if err != nil {
		t.Fatal(err)
	}
	back.Rescore()
	if back.Budget != res.Budget || len(back.Seeds) != len(res.Seeds) || back.ThresholdCap != 100 || back.DataLayout != "sener" || back.MaxTradeoff != 10 || back.EnergyScale != "model" || !back.PaperUpdate {
		t.Fatalf("budget %+v, %d seeds, cap %v, layout %q, trade-off %v, energy scale %q; want %+v, %d, 100, sener, 10, model",
			back.Budget, len(back.Seeds), back.ThresholdCap, back.DataLayout, back.MaxTradeoff, back.EnergyScale, res.Budget, len(res.Seeds))
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, back); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "`paretonav data --layout sener`") {
		t.Errorf("results.md does not state the data layout:\n%s", md.String())
	}
	if !strings.Contains(md.String(), "more than 10 times") || !strings.Contains(md.String(), "each to unit length") || !strings.Contains(md.String(), "the paper's update") {
		t.Errorf("Markdown does not state the trade test and the energy scale:\n%s", md.String())
	}
	if !strings.Contains(md.String(), "ρ = 100") {
		t.Errorf("markdown does not state the threshold cap:\n%s", md.String())
	}
	for i, sr := range res.Seeds {
		for m, vals := range sr.Metrics {
			for metric, v := range vals {
				if got := back.Seeds[i].Metrics[m][metric]; got != v && !(math.IsNaN(got) && math.IsNaN(v)) {
					t.Errorf("seed %d %s %s: rescored %v, run %v", sr.Seed, m, metric, got, v)
				}
			}
		}
	}
	for m, byMetric := range res.Table["fake"] {
		for metric, c := range byMetric {
			if got := back.Table["fake"][m][metric]; got == nil || got.Mean != c.Mean || (c.VsPNG == nil) != (got.VsPNG == nil) {
				t.Errorf("table %s %s: rescored %+v, run %+v", m, metric, got, c)
			}
		}
	}
}

func TestReadResultsErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[]`, "cannot unmarshal"},
		{`{"elapsed_s": 1, "runs": []}`, "budget"},
		{`{"budget": {"Name": "tiny"}, "elapsed_s": 1, "runs": [{"dataset": "d", "points": []}]}`, "runs[0]"},
		{`{"budget": {"Name": "tiny"}, "elapsed_s": 1, "runs": [{"dataset": "d", "seed": 1, "points": [{"method": "png", "losses": [1, 2], "accuracies": [1]}]}]}`, "runs[0].points[0]"},
	} {
		if _, err := ReadResults([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadResults(%s): %v, want an error naming %q", tc.in, err, tc.want)
		}
	}
}

// TestRunTinyAblation runs the protocol with the ablation on fake data:
// the variants are trained from the same phase-1 models and scored, the
// main table is unchanged by them, the ablation table has every variant
// with a t-test against the default png, and every method has a sane
// trace at each checkpoint.
func TestRunTinyAblation(t *testing.T) {
	b := Budgets["tiny"]
	cfg := Config{Budget: b, Datasets: []string{"fake", "other"}, Data: fakeData, Workers: 2, Ablation: "fake"}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	arms := len(Methods) + len(AblationVariants())
	for _, sr := range res.Seeds {
		wantPts, wantAbl := len(Methods)*b.Models*b.Checkpoints, 0
		if sr.Dataset == "fake" {
			wantPts, wantAbl = arms*b.Models*b.Checkpoints, 1+len(AblationVariants())
		}
		if len(sr.Points) != wantPts || len(sr.Ablation) != wantAbl {
			t.Errorf("%s seed %d: %d points, %d ablation rows; want %d, %d", sr.Dataset, sr.Seed, len(sr.Points), len(sr.Ablation), wantPts, wantAbl)
		}
		if len(sr.Metrics) != len(Methods) {
			t.Errorf("%s seed %d: main metrics for %d methods, want %d", sr.Dataset, sr.Seed, len(sr.Metrics), len(Methods))
		}
		// The main table's metrics leave the variants out of the IGD+
		// union: measuring the main methods' points alone gives them.
		var main []Point
		for _, p := range sr.Points {
			if !isAblation(p.Method) {
				main = append(main, p)
			}
		}
		if again := measure(main); !equalMetrics(again, sr.Metrics) {
			t.Errorf("%s seed %d: main metrics depend on the ablation's points: %v vs %v", sr.Dataset, sr.Seed, sr.Metrics, again)
		}
		checkTraces(t, sr, b, wantAbl > 0)
	}
	if len(res.AblationTable) != 1 || res.AblationTable["fake"] == nil {
		t.Fatalf("ablation table for %d datasets, want fake only", len(res.AblationTable))
	}
	for _, name := range ablationNames() {
		c := res.AblationTable["fake"][name]["hv_acc"]
		if c == nil || len(c.Values) != b.Seeds {
			t.Fatalf("ablation cell %s/hv_acc: %+v", name, c)
		}
		if (name == "png") != (c.VsPNG == nil) {
			t.Errorf("ablation %s: t-test %v (want one per variant, none for png)", name, c.VsPNG)
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Ablation: PNG's α and γ on fake", "| α=0.25, γ=0.1 |", "| α=0.5, γ=0.01 |",
		"Paired t-test, α=0.5, γ=0.1 vs each variant", "Phase-2 dynamics", "| png_a0.75_g0.1 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	// The round trip keeps the ablation and the traces.
	js, err := json.Marshal(res.JSON())
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadResults(js)
	if err != nil {
		t.Fatal(err)
	}
	back.Rescore()
	for i, sr := range res.Seeds {
		if !equalMetrics(back.Seeds[i].Ablation, sr.Ablation) {
			t.Errorf("seed %d: rescored ablation %v, run %v", i, back.Seeds[i].Ablation, sr.Ablation)
		}
		if len(back.Seeds[i].Trace) != len(sr.Trace) || (len(sr.Trace) > 0 && back.Seeds[i].Trace[0].G != sr.Trace[0].G) {
			t.Errorf("seed %d: traces lost in the round trip", i)
		}
	}
}

// checkTraces: one trace per method (and variant) and checkpoint, over
// the steps since the previous checkpoint of all models; g ≥ 0; PNG's ē
// > 0 and control share in [0, 1]; linear and MGD never turn a control on.
func checkTraces(t *testing.T, sr SeedResult, b Budget, ablation bool) {
	t.Helper()
	byMethod := map[string][]Trace{}
	for _, tr := range sr.Trace {
		byMethod[tr.Method] = append(byMethod[tr.Method], tr)
	}
	want := append([]string(nil), Methods...)
	if ablation {
		want = append(want, ablationNames()[1:]...)
	}
	if len(byMethod) != len(want) {
		t.Errorf("%s seed %d: traces of %d methods, want %d", sr.Dataset, sr.Seed, len(byMethod), len(want))
	}
	steps := b.CheckpointSteps()
	for _, m := range want {
		ts := byMethod[m]
		if len(ts) != len(steps) {
			t.Errorf("%s: %d traces, want one per checkpoint (%d)", m, len(ts), len(steps))
			continue
		}
		prev := 0
		for i, tr := range ts {
			if tr.Step != steps[i] || tr.Steps != b.Models*(steps[i]-prev) {
				t.Errorf("%s trace %d: step %d over %d model-steps, want %d over %d", m, i, tr.Step, tr.Steps, steps[i], b.Models*(steps[i]-prev))
			}
			prev = steps[i]
			png := m == "png" || isAblation(m)
			if !(tr.G >= 0) || !(tr.ControlOn >= 0 && tr.ControlOn <= 1) || png != (tr.EBar > 0) || (png && !(tr.GOverEBar >= 0)) {
				t.Errorf("%s trace %d: g %v, ē %v, g/ē %v, control on %v", m, i, tr.G, tr.EBar, tr.GOverEBar, tr.ControlOn)
			}
			if (m == "linear" || m == "mgd") && tr.ControlOn != 0 {
				t.Errorf("%s trace %d: control on %v, want 0", m, i, tr.ControlOn)
			}
			for k := range tr.TrainLoss {
				if !(tr.TrainLoss[k] > 0) || math.IsNaN(tr.Descent[k]) || math.IsInf(tr.Descent[k], 0) {
					t.Errorf("%s trace %d: training loss %v, descent %v", m, i, tr.TrainLoss, tr.Descent)
				}
			}
		}
	}
}

func equalMetrics(a, b map[string]map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for m, va := range a {
		for k, x := range va {
			y, ok := b[m][k]
			if !ok || (x != y && !(math.IsNaN(x) && math.IsNaN(y))) {
				return false
			}
		}
	}
	return true
}

// TestScoreMatchesFront: the one-pass scorer gives front.Score's losses
// and accuracies (two passes) on LeNet2.
func TestScoreMatchesFront(t *testing.T) {
	a, err := fakeData("fake", "test", 50, 3)
	if err != nil {
		t.Fatal(err)
	}
	data, err := finetune.NewDataset(a)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []backend.Task
	for _, s := range Tasks {
		tk, err := backend.ParseTask(s)
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, tk)
	}
	md, err := backend.Open(&importer.Model{Proto: models.LeNet2(2)}, tasks, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, batch := range []int{16, 50} { // 16: a short last batch
		l1, a1, err := score(md, tasks, data, batch)
		if err != nil {
			t.Fatal(err)
		}
		l2, a2, err := front.Score(md, tasks, data, batch)
		if err != nil {
			t.Fatal(err)
		}
		for k := range tasks {
			if math.Abs(l1[k]-l2[k]) > 1e-6*math.Abs(l2[k]) || a1[k] != a2[k] {
				t.Errorf("batch %d task %s: score (%v, %v), front.Score (%v, %v)", batch, tasks[k].Name, l1[k], a1[k], l2[k], a2[k])
			}
		}
	}
	bad := []backend.Task{{Name: "d", Loss: "depth_l1", Output: "logp_left", Target: "left"}}
	if _, _, err := score(md, bad, data, 16); err == nil || !strings.Contains(err.Error(), `task "d"`) {
		t.Errorf("score with a depth_l1 task: %v, want an error naming it", err)
	}
}

// TestRunWorkersAgree: the schedule does not change the results: one
// worker and three (the jobs then run in another order and at once) give
// the same checkpoints and traces.
func TestRunWorkersAgree(t *testing.T) {
	b := Budgets["tiny"]
	b.Seeds = 2
	var runs [2]*Results
	for i, w := range []int{1, 3} {
		res, err := Run(context.Background(), Config{Budget: b, Datasets: []string{"fake"}, Data: fakeData, Workers: w, Ablation: "fake"})
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = res
	}
	for s := range runs[0].Seeds {
		a, c := runs[0].Seeds[s], runs[1].Seeds[s]
		if len(a.Points) != len(c.Points) || len(a.Trace) != len(c.Trace) {
			t.Fatalf("seed %d: %d/%d points, %d/%d traces", s, len(a.Points), len(c.Points), len(a.Trace), len(c.Trace))
		}
		for i, p := range a.Points {
			q := c.Points[i]
			if p.Method != q.Method || p.Model != q.Model || p.Step != q.Step || !equalFloats(p.Losses, q.Losses) || !equalFloats(p.Accuracies, q.Accuracies) {
				t.Errorf("seed %d point %d: 1 worker %+v, 3 workers %+v", s, i, p, q)
			}
		}
		for i, tr := range a.Trace {
			if u := c.Trace[i]; tr.Method != u.Method || tr.G != u.G || tr.ControlOn != u.ControlOn || !equalFloats(tr.Descent, u.Descent) {
				t.Errorf("seed %d trace %d: 1 worker %+v, 3 workers %+v", s, i, tr, u)
			}
		}
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRunFailedArm forces runs to diverge (a huge learning rate and a
// divergence bound just above the first losses): mgd in seed 1, the
// linear model 2 in seed 2 and an ablation variant in seed 3. The
// benchmark goes on; each failure is recorded with its error, its points
// left out and its metrics NaN (null in JSON); every other run is
// complete; the t-tests pair only the seeds where both runs exist; and
// the failures survive a rescore.
func TestRunFailedArm(t *testing.T) {
	b := Budgets["tiny"]
	b.Seeds = 3
	variant := AblationVariants()[0].Name()
	fail := map[int64]string{1: "mgd", 2: "linear", 3: variant}
	cfg := Config{Budget: b, Datasets: []string{"fake"}, Data: fakeData, Workers: 2, Ablation: "fake",
		tweak: func(arm string, s *finetune.Settings) {
			if fail[s.Seed] != arm || (arm == "linear" && s.Method.(png.Linear).Weights[0] != LinearWeights[2]) {
				return
			}
			s.LR, s.DivergeFactor, s.MaxRetries = 100, 1e-9, -1
		}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	arms := append(append([]string(nil), Methods...), ablationNames()[1:]...)
	for _, sr := range res.Seeds {
		bad := fail[sr.Seed]
		if len(sr.Failures) != 1 || sr.Failures[0].Method != bad || !strings.Contains(sr.Failures[0].Error, "phase 2") {
			t.Fatalf("seed %d: failures %+v, want one for %s", sr.Seed, sr.Failures, bad)
		}
		count := map[string]int{}
		for _, p := range sr.Points {
			count[p.Method]++
		}
		for _, m := range arms {
			want := b.Models * b.Checkpoints
			if m == bad {
				want = 0
			}
			if count[m] != want {
				t.Errorf("seed %d: %d points of %s, want %d", sr.Seed, count[m], m, want)
			}
			ms := sr.Metrics
			if isAblation(m) {
				ms = sr.Ablation
			}
			for _, metric := range Metrics {
				v, ok := ms[m][metric]
				if !ok || math.IsNaN(v) != (m == bad) {
					t.Errorf("seed %d: %s %s = %v (present %v), want NaN only for the failed run", sr.Seed, m, metric, v, ok)
				}
			}
		}
	}
	// mgd failed in seed 1 only: its mean is over seeds 2 and 3 and its
	// t-test pairs them with png's.
	c, p := res.Table["fake"]["mgd"]["igd_acc"], res.Table["fake"]["png"]["igd_acc"]
	if c.N != 2 || len(c.Values) != 3 || !math.IsNaN(c.Values[0]) || c.VsPNG == nil || c.VsPNG.N != 2 {
		t.Fatalf("mgd cell %+v, want 2 of 3 seeds and a t-test of 2 pairs", c)
	}
	want, err := PairedT(p.Values[1:], c.Values[1:])
	if err != nil {
		t.Fatal(err)
	}
	if !(c.VsPNG.T == want.T || math.IsNaN(want.T) && math.IsNaN(c.VsPNG.T)) {
		t.Errorf("t-test %+v, want %+v (seeds 2 and 3)", *c.VsPNG, want)
	}
	if epo := res.Table["fake"]["epo"]["igd_acc"]; epo.N != 3 || epo.VsPNG == nil || epo.VsPNG.N != 3 {
		t.Errorf("epo cell %+v, want 3 seeds and 3 pairs", epo)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Failed runs", "| fake | 1 | mgd | phase 2, mgd: ", "| fake | 2 | linear | phase 2, linear model 2: ",
		"| fake | 3 | " + variant + " |", "(2 of 3 seeds)"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	raw, err := json.Marshal(res.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"mgd":{"hv_acc":null`) {
		t.Errorf("results JSON lacks mgd's null metrics")
	}
	back, err := ReadResults(raw)
	if err != nil {
		t.Fatal(err)
	}
	back.Rescore()
	for i, sr := range back.Seeds {
		if len(sr.Failures) != 1 || sr.Failures[0] != res.Seeds[i].Failures[0] {
			t.Errorf("rescored seed %d: failures %+v, want %+v", sr.Seed, sr.Failures, res.Seeds[i].Failures)
		}
		if v := sr.Metrics["mgd"]["hv_loss"]; math.IsNaN(v) != (sr.Seed == 1) {
			t.Errorf("rescored seed %d: mgd hv_loss %v", sr.Seed, v)
		}
	}
	if got := back.Table["fake"]["mgd"]["igd_acc"]; got.N != 2 || got.Mean != c.Mean || got.VsPNG == nil || got.VsPNG.T != c.VsPNG.T {
		t.Errorf("rescored mgd cell %+v, want %+v", got, c)
	}
}
