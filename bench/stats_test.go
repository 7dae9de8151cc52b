package bench

import (
	"math"
	"testing"
)

// The reference values were computed independently of gonum with
// mpmath 1.3.0 (python3; scipy is not installed here):
//
//	mp.dps = 30; d = [mpf(a_i) - mpf(b_i)]; t = mean(d) / (stdev(d) / sqrt(n))
//	p = betainc(ν/2, 1/2, 0, ν/(ν+t²), regularized=True)   # = 2·P(T_ν > |t|)
//
// the two-sided p-value of scipy.stats.ttest_rel (ν = n − 1).
func TestPairedT(t *testing.T) {
	const tol = 1e-9
	for _, tc := range []struct {
		name  string
		a, b  []float64
		tt, p float64
	}{
		{"five seeds", []float64{0.31, 0.35, 0.29, 0.33, 0.36}, []float64{0.28, 0.30, 0.29, 0.31, 0.30},
			2.99707459706142078, 0.0400573856147653189},
		{"three, negative", []float64{1, 2, 3}, []float64{1.5, 2.9, 3.2}, -2.63038379688571775, 0.119228987898911431},
		{"all equal differences", []float64{2, 3}, []float64{1, 2}, math.Inf(1), 0},
		{"no difference", []float64{2, 3}, []float64{2, 3}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := PairedT(tc.a, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if r.DF != float64(len(tc.a)-1) {
				t.Errorf("df %v, want %d", r.DF, len(tc.a)-1)
			}
			if !(r.T == tc.tt || math.Abs(r.T-tc.tt) <= tol*math.Abs(tc.tt)) {
				t.Errorf("t = %.15g, want %.15g", r.T, tc.tt)
			}
			if math.Abs(r.P-tc.p) > tol {
				t.Errorf("p = %.15g, want %.15g", r.P, tc.p)
			}
		})
	}
}

func TestPairedTErrors(t *testing.T) {
	for _, tc := range []struct{ a, b []float64 }{{[]float64{1}, []float64{2}}, {[]float64{1, 2}, []float64{1}}} {
		if _, err := PairedT(tc.a, tc.b); err == nil {
			t.Errorf("PairedT(%v, %v): no error", tc.a, tc.b)
		}
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		x         []float64
		mean, std float64
	}{
		{[]float64{1, 2, 3, 4}, 2.5, math.Sqrt(5.0 / 3)},
		{[]float64{7}, 7, 0},
	} {
		s := Summarize(tc.x)
		if math.Abs(s.Mean-tc.mean) > 1e-12 || math.Abs(s.Std-tc.std) > 1e-12 || s.N != len(tc.x) {
			t.Errorf("Summarize(%v) = %+v, want mean %v std %v", tc.x, s, tc.mean, tc.std)
		}
	}
}
