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

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models/datasets"
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
		name        string
		modelSteps  int
		scorings    int
		checkpoints []int
		// estimate for all three datasets with 2 workers
		estimate time.Duration
	}{
		// small: 5·300 + 4·5·75 = 3000 steps (4 methods: linear, MGD, EPO,
		// PNG); 4·5·3 = 60 scorings of ⌈1000/256⌉ = 4 batches, 2 passes each.
		// 3 datasets × 3 seeds × (3000·0.2/2 + 60·2·4·0.075) s = 9 × 336 s.
		{"small", 3000, 60, []int{25, 50, 75}, 9 * (300*time.Second + 36*time.Second)},
		// paper: 5·28140 + 20·18760 = 515900 steps per dataset and seed;
		// 4·5·40 = 800 scorings, one per epoch of phase 2 (469 steps).
		{"paper", 515900, 800, paperCheckpoints(), 0},
		{"tiny", 50, 40, []int{1, 2}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Budgets[tc.name]
			if err := b.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := b.ModelSteps(); got != tc.modelSteps {
				t.Errorf("ModelSteps = %d, want %d", got, tc.modelSteps)
			}
			if got := b.Scorings(); got != tc.scorings {
				t.Errorf("Scorings = %d, want %d", got, tc.scorings)
			}
			if got := b.CheckpointSteps(); !equalInts(got, tc.checkpoints) {
				t.Errorf("CheckpointSteps = %v, want %v", got, tc.checkpoints)
			}
			if tc.estimate > 0 {
				if got := b.Estimate(3, 2); (got - tc.estimate).Abs() > time.Millisecond {
					t.Errorf("Estimate(3 datasets, 2 workers) = %v, want %v", got, tc.estimate)
				}
			}
		})
	}
	// The small budget's promise: all three datasets within the hour on
	// two free cores, with room to spare.
	if est := Budgets["small"].Estimate(3, 2); est > 55*time.Minute {
		t.Errorf("small budget estimate %v exceeds 55 minutes", est)
	}
	plan := Budgets["small"].Describe([]string{"multimnist", "multifashion", "fashionmnist"}, 2)
	for _, want := range []string{"20480 training and 1000 test pairs", "3 seeds", "checkpoints at steps [25 50 75]", "expected duration ≈ 50m24s"} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
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
// metric and the table come out as the run computed them.
func TestRescoreRoundTrip(t *testing.T) {
	res, err := Run(context.Background(), Config{Budget: Budgets["tiny"], Datasets: []string{"fake"}, Data: fakeData, Workers: 2})
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
	if back.Budget != res.Budget || len(back.Seeds) != len(res.Seeds) {
		t.Fatalf("budget %+v, %d seeds; want %+v, %d", back.Budget, len(back.Seeds), res.Budget, len(res.Seeds))
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
