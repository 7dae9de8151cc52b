package metrics

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

// oracleCase is one case of testdata/oracle.json (made by
// testdata/make_oracle.py with numpy).
type oracleCase struct {
	Name   string             `json:"name"`
	Kind   string             `json:"kind"`
	N      int                `json:"N"`
	C      int                `json:"C"`
	Inner  int                `json:"inner"`
	Ignore int64              `json:"ignore"`
	Scores []float64          `json:"scores"`
	Labels []float64          `json:"labels"`
	Pred   []float64          `json:"pred"`
	Target []float64          `json:"target"`
	Want   map[string]float64 `json:"want"`
}

const (
	exactTol  = 1e-12 // sums and counts in float64
	medianTol = 1e-5  // the median is read from float32 angles (degrees)
)

// TestOracle feeds every case one example at a time (the accumulators
// must pool, not average batch means) and compares with numpy's values
// over the whole evaluation.
func TestOracle(t *testing.T) {
	raw, err := os.ReadFile("testdata/oracle.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []oracleCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) < 6 {
		t.Fatalf("%d cases in oracle.json, want 6", len(file.Cases))
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			got := map[string]float64{}
			switch c.Kind {
			case "confusion":
				cm := NewConfusion(c.C)
				per := c.C * c.Inner
				for n := 0; n < c.N; n++ {
					if err := cm.AddScores(c.Scores[n*per:(n+1)*per], c.Labels[n*c.Inner:(n+1)*c.Inner], 1, c.Inner, c.Ignore); err != nil {
						t.Fatal(err)
					}
				}
				got["miou"], got["accuracy"] = cm.MIoU(), cm.Accuracy()
				var present float64
				for k := 0; k < c.C; k++ {
					var union int64
					for j := 0; j < c.C; j++ {
						union += cm.Counts[k*c.C+j] + cm.Counts[j*c.C+k]
					}
					if union > 0 {
						present++
					}
				}
				got["classes_present"] = present
			case "depth":
				var d Depth
				half := len(c.Pred) / 2
				if err := d.Add(c.Pred[:half], c.Target[:half]); err != nil {
					t.Fatal(err)
				}
				if err := d.Add(c.Pred[half:], c.Target[half:]); err != nil {
					t.Fatal(err)
				}
				got[AbsErr], got[RelErr] = d.AbsErr(), d.RelErr()
			case "normals":
				var a Normals
				per := c.C * c.Inner
				for n := 0; n < c.N; n++ {
					if err := a.Add(c.Pred[n*per:(n+1)*per], c.Target[n*per:(n+1)*per], 1, c.C, c.Inner); err != nil {
						t.Fatal(err)
					}
				}
				got[AngleMean], got[AngleMedian], got["count"] = a.Mean(), a.Median(), float64(a.Count())
				got[Within11], got[Within22], got[Within30] = a.Within(11.25), a.Within(22.5), a.Within(30)
			default:
				t.Fatalf("unknown kind %q", c.Kind)
			}
			for k, want := range c.Want {
				tol := exactTol
				if k == AngleMedian {
					tol = medianTol
				}
				if g, ok := got[k]; !ok || math.Abs(g-want) > tol*math.Max(1, math.Abs(want)) {
					t.Errorf("%s = %.15g, numpy %.15g", k, g, want)
				}
			}
		})
	}
}

// TestConfusionByHand: a 3-class example worked out on paper.
func TestConfusionByHand(t *testing.T) {
	// Scores [1, 3, 4] (one example, 3 classes, 4 pixels); the argmax per
	// pixel is 0, 1, 1, 0. Labels 0, 1, 0, ignore(9).
	scores := []float64{
		5, 0, 0, 2, // class 0
		1, 4, 3, 1, // class 1
		0, 1, 2, 0, // class 2
	}
	labels := []float64{0, 1, 0, 9}
	c := NewConfusion(3)
	if err := c.AddScores(scores, labels, 1, 4, 9); err != nil {
		t.Fatal(err)
	}
	// Counted: (t0,p0), (t1,p1), (t0,p1). Class 0: TP 1, union 2 → 1/2;
	// class 1: TP 1, union 2 → 1/2; class 2: absent from both, left out.
	if got := c.MIoU(); got != 0.5 {
		t.Errorf("mIoU = %v, want 0.5", got)
	}
	if got := c.Accuracy(); got != 2.0/3 {
		t.Errorf("pixel accuracy = %v, want 2/3", got)
	}
	empty := NewConfusion(2)
	if !math.IsNaN(empty.MIoU()) || !math.IsNaN(empty.Accuracy()) {
		t.Errorf("empty matrix: mIoU %v, accuracy %v; want NaN", empty.MIoU(), empty.Accuracy())
	}
	// The zero vector predicts 90°; a pixel with a zero target is skipped.
	var a Normals
	if err := a.Add([]float64{0, 1, 0, 0, 0, 0}, []float64{1, 0, 0, 0, 0, 0}, 1, 3, 2); err != nil {
		t.Fatal(err)
	}
	if a.Count() != 1 || a.Mean() != 90 || a.Median() != 90 || a.Within(30) != 0 {
		t.Errorf("normals: count %d, mean %v, median %v; want one pixel at 90°", a.Count(), a.Mean(), a.Median())
	}
	if err := a.Add([]float64{2, 0, 0}, []float64{-3, 0, 0}, 1, 3, 1); err != nil || a.Median() != 135 {
		t.Errorf("opposite normals: median of {90, 180} = %v (err %v), want 135", a.Median(), err)
	}
}

func TestErrors(t *testing.T) {
	c := NewConfusion(2)
	var d Depth
	var a Normals
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"label-range", c.AddScores([]float64{1, 2}, []float64{2}, 1, 1, -1), "label 2 at example 0"},
		{"label-fraction", c.AddScores([]float64{1, 2}, []float64{0.5}, 1, 1, -1), "label 0.5"},
		{"scores-length", c.AddScores([]float64{1}, []float64{0}, 1, 1, -1), "1 scores and 1 labels"},
		{"depth-length", d.Add([]float64{1}, nil), "1 predictions for 0 targets"},
		{"normals-length", a.Add([]float64{1}, []float64{1}, 1, 3, 1), "want N·C·inner"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one mentioning %q", tc.name, tc.err, tc.want)
		}
	}
}
