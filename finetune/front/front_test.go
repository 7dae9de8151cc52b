package front

import (
	"math"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models/synthetic"
)

func TestPerturb(t *testing.T) {
	mk := func(n int) []finetune.Problem {
		ps := make([]finetune.Problem, n)
		for k := range ps {
			p, _ := synthetic.New("exp2")
			ps[k] = p
		}
		return ps
	}
	params := func(p finetune.Problem) []float32 {
		v := make([]float32, p.NumParams())
		p.Params(v)
		return v
	}
	a, b := mk(3), mk(2)
	base := params(a[0])
	if err := Perturb(a, 0.1, 7); err != nil {
		t.Fatal(err)
	}
	if err := Perturb(b, 0.1, 7); err != nil {
		t.Fatal(err)
	}
	for k := range b {
		pa, pb := params(a[k]), params(b[k])
		var moved float64
		for i := range pa {
			if pa[i] != pb[i] {
				t.Fatalf("model %d, parameter %d: %v with 3 models, %v with 2 (noise must not depend on N)", k, i, pa[i], pb[i])
			}
			moved += math.Abs(float64(pa[i] - base[i]))
		}
		if moved == 0 {
			t.Errorf("model %d not perturbed", k)
		}
	}
	if p0, p1 := params(a[0]), params(a[1]); p0[0] == p1[0] {
		t.Error("models 0 and 1 got the same noise")
	}
	for _, s := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := Perturb(a, s, 1); err == nil {
			t.Errorf("spread %v: no error", s)
		}
	}
}

func TestMeasureAndGaps(t *testing.T) {
	pts := [][]float64{{0.5, 0.1}, {0.1, 0.5}, {0.3, 0.3}, {0.4, 0.4}} // the last is dominated
	q := Measure(pts, []float64{0.6, 0.6}, nil)
	// Sweep over ℓ1 to the reference (0.6, 0.6): [0.1, 0.3) under height
	// 0.1, [0.3, 0.5) under 0.3, [0.5, 0.6) under 0.5.
	if want := 0.2*0.1 + 0.2*0.3 + 0.1*0.5; math.Abs(q.HV-want) > 1e-12 || q.NonDominated != 3 || q.IGDPlus != 0 {
		t.Errorf("Measure = %+v, want HV %v, 3 non-dominated, IGD+ 0", q, want)
	}
	q = Measure(pts[3:], []float64{0.6, 0.6}, pts[:3])
	// (0.4,0.4) against the three others: d⁺ = 0.3, 0.3, √0.02.
	if want := (0.3 + 0.3 + math.Sqrt(0.02)) / 3; math.Abs(q.IGDPlus-want) > 1e-12 {
		t.Errorf("IGD+ = %v, want %v", q.IGDPlus, want)
	}
	g := Gaps([][]float64{{0.5, 0.1}, {0.1, 0.5}, {0.3, 0.3}})
	if len(g) != 2 || math.Abs(g[0]-math.Sqrt(0.08)) > 1e-12 || math.Abs(g[1]-math.Sqrt(0.08)) > 1e-12 {
		t.Errorf("Gaps = %v, want two gaps of √0.08", g)
	}
	if Gaps([][]float64{{1, 2}}) != nil {
		t.Error("Gaps of one point is not nil")
	}
	ms := []Member{{Losses: []float64{1, 2}, Acc: []float64{0.5, 0.25}}}
	if a := AccPoints(ms); len(a) != 1 || a[0][0] != -0.5 || a[0][1] != -0.25 {
		t.Errorf("AccPoints = %v, want negated accuracies", a)
	}
	if a := AccPoints([]Member{{Losses: []float64{1}, Acc: []float64{math.NaN()}}}); a != nil {
		t.Errorf("AccPoints with a task without accuracy = %v, want nil", a)
	}
}

func TestCountHits(t *testing.T) {
	out := importer.NewFloat32("o", []int{4, 3}, []float32{
		0, 2, 1, // argmax 1
		5, 5, 1, // tie: first, 0
		0, 0, 9, // 2
		1, 0, 0, // 0
	})
	for _, tc := range []struct {
		name          string
		labels        []int64
		ignore        int64
		hits, counted int
	}{
		{"all right", []int64{1, 0, 2, 0}, -100, 4, 4},
		{"two wrong", []int64{2, 1, 2, 0}, -100, 2, 4},
		{"ignored", []int64{1, -100, -100, 2}, -100, 1, 2},
	} {
		h, c, err := countHits(out, importer.NewInt64("y", []int{4}, tc.labels), tc.ignore)
		if err != nil || h != tc.hits || c != tc.counted {
			t.Errorf("%s: %d hits of %d (%v), want %d of %d", tc.name, h, c, err, tc.hits, tc.counted)
		}
	}
	if _, _, err := countHits(out, importer.NewInt64("y", []int{3}, []int64{0, 0, 0}), -100); err == nil {
		t.Error("3 labels for 4 rows: no error")
	}
}

func TestSnapshots(t *testing.T) {
	p, _ := synthetic.New("exp2")
	s := &Snapshots{Problems: []finetune.Problem{p}, At: map[int]bool{2: true, 4: true}}
	res, err := finetune.Run(t.Context(), p, nil, nil, &finetune.Settings{Steps: 4, LR: 0.01}, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Params) != 2 || s.Steps[0] != 2 || s.Steps[1] != 4 {
		t.Fatalf("snapshots at steps %v, want [2 4]", s.Steps)
	}
	for i, v := range s.Params[1][0] {
		if v != res.Points[0].Params[i] {
			t.Fatalf("snapshot at the last step differs from the final parameters at %d", i)
		}
	}
	if s.Params[0][0][0] == s.Params[1][0][0] {
		t.Error("snapshots at steps 2 and 4 are equal")
	}
}
