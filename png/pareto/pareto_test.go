package pareto

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// Tolerances.
const (
	exactTol = 1e-12 // hand-computed values and algorithm cross-checks
	mcRelTol = 0.02  // Monte Carlo with 400k samples
)

func TestNonDominated(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		points [][]float64
		want   []int
	}{
		{"empty", nil, nil},
		{"one", [][]float64{{1, 2}}, []int{0}},
		{"chain", [][]float64{{3, 3}, {2, 2}, {1, 1}}, []int{2}},
		{"front", [][]float64{{1, 3}, {2, 2}, {3, 1}, {3, 3}}, []int{0, 1, 2}},
		{"weakly dominated", [][]float64{{1, 2}, {1, 3}, {2, 1}}, []int{0, 2}},
		{"duplicates keep first", [][]float64{{2, 2}, {1, 3}, {2, 2}, {1, 3}}, []int{0, 1}},
		{"dominated duplicates", [][]float64{{2, 2}, {2, 2}, {1, 1}}, []int{2}},
		{"NaN dropped", [][]float64{{nan, 0}, {1, 1}}, []int{1}},
		{"3-D", [][]float64{{1, 2, 3}, {3, 2, 1}, {2, 2, 2}, {3, 3, 3}, {1, 2, 4}}, []int{0, 1, 2}},
	}
	for _, tt := range tests {
		if got := NonDominated(tt.points); !slices.Equal(got, tt.want) {
			t.Errorf("%s: NonDominated = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestHypervolumeHand(t *testing.T) {
	tests := []struct {
		name   string
		points [][]float64
		ref    []float64
		want   float64
	}{
		{"1-D", [][]float64{{3}, {1}, {5}}, []float64{4}, 3},
		{"2-D staircase", [][]float64{{1, 3}, {2, 2}, {3, 1}}, []float64{4, 4}, 6},
		{"2-D with dominated and duplicate", [][]float64{{3, 1}, {2, 2}, {1, 3}, {3, 3}, {2, 2}}, []float64{4, 4}, 6},
		{"2-D outside ref", [][]float64{{1, 5}, {5, 1}, {4, 0}, {2, 2}}, []float64{4, 4}, 4},
		{"2-D tie in x", [][]float64{{1, 2}, {1, 1}}, []float64{2, 2}, 1},
		{"2-D none inside", [][]float64{{4, 4}}, []float64{4, 4}, 0},
		{"3-D cube", [][]float64{{1, 1, 1}}, []float64{2, 2, 2}, 1},
		{"3-D two boxes", [][]float64{{0, 0, 1}, {1, 1, 0}}, []float64{2, 2, 2}, 5},
		{"3-D three boxes", [][]float64{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}}, []float64{2, 2, 2}, 4},
		{"3-D tie in z", [][]float64{{0, 1, 0}, {1, 0, 0}}, []float64{2, 2, 1}, 3},
		{"4-D two boxes", [][]float64{{0, 0, 0, 1}, {1, 1, 1, 0}}, []float64{2, 2, 2, 2}, 8 + 2 - 1},
		{"5-D permutations", [][]float64{{0, 1, 1, 1, 1}, {1, 0, 1, 1, 1}}, []float64{2, 2, 2, 2, 2}, 2 + 2 - 1},
	}
	for _, tt := range tests {
		if got := Hypervolume(tt.points, tt.ref); !scalar.EqualWithinAbsOrRel(got, tt.want, exactTol, exactTol) {
			t.Errorf("%s: Hypervolume = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// randomFront returns n points with objectives in [0, 1), biased towards
// a front by normalising each to a random length.
func randomFront(rng *rand.Rand, n, m int) [][]float64 {
	pts := make([][]float64, n)
	for i := range pts {
		p := make([]float64, m)
		var s float64
		for j := range p {
			p[j] = rng.Float64()
			s += p[j] * p[j]
		}
		r := (0.8 + 0.2*rng.Float64()) / math.Sqrt(s)
		for j := range p {
			p[j] = min(p[j]*r, 0.999)
		}
		pts[i] = p
	}
	return pts
}

func TestHypervolumeWFGMatchesSweeps(t *testing.T) {
	const trials = 30
	rng := rand.New(rand.NewPCG(11, 12))
	for _, m := range []int{2, 3} {
		for trial := range trials {
			n := 1 + trial%15
			pts := randomFront(rng, n, m)
			if trial%5 == 0 { // duplicates and dominated points
				pts = append(pts, pts[0], []float64{0.999, 0.999, 0.999}[:m])
			}
			ref := []float64{1, 1.1, 1.2}[:m]
			var in [][]float64
			for _, p := range pts {
				if inside(p, ref) {
					in = append(in, p)
				}
			}
			got := wfg(nonDominatedPoints(in), ref)
			want := Hypervolume(pts, ref)
			if !scalar.EqualWithinAbsOrRel(got, want, exactTol, exactTol) {
				t.Errorf("m=%d n=%d: WFG %v, sweep %v", m, n, got, want)
			}
		}
	}
}

func TestHypervolumeMonteCarlo(t *testing.T) {
	const samples = 400000
	rng := rand.New(rand.NewPCG(13, 14))
	for _, tc := range []struct{ m, n int }{{2, 8}, {3, 10}, {4, 8}, {5, 6}} {
		pts := randomFront(rng, tc.n, tc.m)
		ref := make([]float64, tc.m)
		for i := range ref {
			ref[i] = 1
		}
		hits := 0
		x := make([]float64, tc.m)
		for range samples {
			for i := range x {
				x[i] = rng.Float64()
			}
			for _, p := range pts {
				if Dominates(p, x) {
					hits++
					break
				}
			}
		}
		est := float64(hits) / samples // the box [0, ref] has volume 1
		got := Hypervolume(pts, ref)
		if !scalar.EqualWithinRel(got, est, mcRelTol) {
			t.Errorf("m=%d n=%d: Hypervolume %v, Monte Carlo %v", tc.m, tc.n, got, est)
		}
	}
}

func TestHypervolumePermutationInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	pts := randomFront(rng, 12, 4)
	ref := []float64{1, 1, 1, 1}
	want := Hypervolume(pts, ref)
	for range 5 {
		rng.Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
		if got := Hypervolume(pts, ref); !scalar.EqualWithinAbsOrRel(got, want, exactTol, exactTol) {
			t.Errorf("shuffled: %v, want %v", got, want)
		}
	}
}

func TestIGDPlus(t *testing.T) {
	ref := [][]float64{{0, 1}, {1, 0}}
	tests := []struct {
		name   string
		points [][]float64
		want   float64
	}{
		{"on the reference", [][]float64{{0, 1}, {1, 0}}, 0},
		{"middle point", [][]float64{{0.5, 0.5}}, 0.5},
		{"one end", [][]float64{{0, 1}}, 0.5},
		{"dominating point", [][]float64{{-1, -1}}, 0},
		{"behind", [][]float64{{1, 2}}, (math.Sqrt(1+1) + 2) / 2},
		{"empty", nil, math.Inf(1)},
	}
	for _, tt := range tests {
		if got := IGDPlus(tt.points, ref); !(got == tt.want || scalar.EqualWithinAbs(got, tt.want, exactTol)) {
			t.Errorf("%s: IGDPlus = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestTransforms(t *testing.T) {
	acc := [][]float64{{0.9, 0.8}, {0.7, 0.95}}
	neg := ForAccuracies(acc)
	if neg[0][0] != -0.9 || neg[1][1] != -0.95 || acc[0][0] != 0.9 {
		t.Errorf("ForAccuracies(%v) = %v (input must be unchanged)", acc, neg)
	}
	half := NegateColumns(acc, 1)
	if half[0][0] != 0.9 || half[0][1] != -0.8 || acc[0][1] != 0.8 {
		t.Errorf("NegateColumns(%v, 1) = %v (input must be unchanged)", acc, half)
	}
	// Accuracies above (0.5, 0.5): boxes 0.4×0.3 and 0.2×0.45 overlap in 0.2×0.3.
	got := Hypervolume(neg, ForAccuracies([][]float64{{0.5, 0.5}})[0])
	if want := 0.12 + 0.09 - 0.06; !scalar.EqualWithinAbs(got, want, exactTol) {
		t.Errorf("accuracy hypervolume %v, want %v", got, want)
	}
}

func TestShapePanics(t *testing.T) {
	tests := []struct {
		name string
		f    func()
	}{
		{"Hypervolume ragged", func() { Hypervolume([][]float64{{1, 2}, {1}}, []float64{3, 3}) }},
		{"Hypervolume empty ref", func() { Hypervolume(nil, nil) }},
		{"NonDominated ragged", func() { NonDominated([][]float64{{1, 2}, {1}}) }},
		{"IGDPlus no reference", func() { IGDPlus([][]float64{{1}}, nil) }},
		{"IGDPlus ragged", func() { IGDPlus([][]float64{{1}}, [][]float64{{1, 2}}) }},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tt.name)
				}
			}()
			tt.f()
		}()
	}
}
