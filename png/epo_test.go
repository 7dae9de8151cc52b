package png

import (
	"math"
	"strings"
	"testing"
)

func TestEPOAdjustment(t *testing.T) {
	// Expected values from numpy (float64), /usr/bin/python3:
	//   h = r*l/(r*l).sum(); mu = (h*log(m*h)).sum(); a = r*(log(m*h) - mu)
	for _, tc := range []struct {
		r, l []float64
		mu   float64
		a    []float64
	}{
		{[]float64{1, 1}, []float64{0.4, 0.4}, 0, []float64{0, 0}},
		{[]float64{1, 2}, []float64{1, 1}, 0.056633012265132426, []float64{-0.4620981203732969, 0.46209812037329684}},
		{[]float64{1, 1}, []float64{0.3, 0.6}, 0.05663301226513259, []float64{-0.4620981203732969, 0.23104906018664842}},
		{[]float64{2, 1, 0.5}, []float64{0.2, 0.7, 1.5}, 0.03372378047214086, []float64{-0.9331757255368393, 0.09302792516700295, 0.08101039832697722}},
	} {
		mu, a, err := EPOAdjustment(tc.r, tc.l)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(mu-tc.mu) > 1e-15 {
			t.Errorf("r %v, ℓ %v: μ = %.17g, want %.17g", tc.r, tc.l, mu, tc.mu)
		}
		for j := range a {
			if math.Abs(a[j]-tc.a[j]) > 1e-14 {
				t.Errorf("r %v, ℓ %v: a = %v, want %v", tc.r, tc.l, a, tc.a)
				break
			}
		}
		// a/Σrℓ is ∂μ/∂ℓ: check by central differences.
		var sum float64
		for j := range tc.r {
			sum += tc.r[j] * tc.l[j]
		}
		for j := range tc.l {
			const h = 1e-6
			lp := append([]float64(nil), tc.l...)
			lm := append([]float64(nil), tc.l...)
			lp[j] += h
			lm[j] -= h
			mp, _, _ := EPOAdjustment(tc.r, lp)
			mm, _, _ := EPOAdjustment(tc.r, lm)
			if fd := (mp - mm) / (2 * h); math.Abs(fd-a[j]/sum) > 1e-8 {
				t.Errorf("r %v, ℓ %v: ∂μ/∂ℓ_%d = %.10g by differences, a/Σrℓ = %.10g", tc.r, tc.l, j, fd, a[j]/sum)
			}
		}
	}
}

// epoCase is a small problem for EPO.Direction: task gradients (rows),
// losses and preference.
type epoCase struct {
	name   string
	J      [][]float32
	losses []float64
	r      []float64
	mode   string
}

func TestEPODirection(t *testing.T) {
	for _, tc := range []epoCase{
		{"balance-2", [][]float32{{1, 0.2}, {0.3, 1}}, []float64{0.8, 0.2}, []float64{1, 1}, "balance"},
		{"balance-preference", [][]float32{{1, 0.2}, {0.3, 1}}, []float64{0.4, 0.2}, []float64{1, 3}, "balance"},
		{"balance-3", [][]float32{{1, 0, 0.5}, {0, 1, 0.5}, {-0.5, 0.5, 1}}, []float64{0.5, 0.2, 0.9}, []float64{1, 2, 1}, "balance"},
		{"balance-conflict", [][]float32{{1, 0}, {-1, 0.1}}, []float64{0.9, 0.3}, []float64{1, 1}, "balance"},
		{"descent", [][]float32{{1, 0.2}, {0.3, 1}}, []float64{0.5, 0.25}, []float64{1, 2}, "descent"},
		{"descent-front", [][]float32{{1, 2}, {-2, -4}}, []float64{0.5, 0.5}, []float64{1, 1}, "descent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, n := len(tc.J), len(tc.J[0])
			J := NewJacobian(m, n)
			for i, row := range tc.J {
				copy(J.Row(i), row)
			}
			dst := make([]float32, n)
			info, err := EPO{Preference: tc.r}.Direction(dst, J, Gradient{Losses: tc.losses}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode != tc.mode || info.ControlOn != (tc.mode == "balance") {
				t.Fatalf("mode %q (control %v), want %q", info.Mode, info.ControlOn, tc.mode)
			}
			const tol = 1e-9
			var sum float64
			for _, b := range info.Beta {
				if b < 0 {
					t.Errorf("β = %v has a negative weight", info.Beta)
				}
				sum += b
			}
			if math.Abs(sum-1) > tol {
				t.Errorf("Σβ = %g, want 1", sum)
			}
			// dst = Jᵀβ; rate[j] = ∇ℓ_jᵀv = (Kβ)_j.
			for k := 0; k < n; k++ {
				var want float64
				for i := 0; i < m; i++ {
					want += info.Beta[i] * float64(J.Row(i)[k])
				}
				if math.Abs(float64(dst[k])-want) > 1e-6 {
					t.Errorf("v[%d] = %g, want (Jᵀβ)[%d] = %g", k, dst[k], k, want)
				}
			}
			rate := make([]float64, m)
			for j := 0; j < m; j++ {
				for k := 0; k < n; k++ {
					rate[j] += float64(J.Row(j)[k]) * float64(dst[k])
				}
			}
			_, a, _ := EPOAdjustment(tc.r, tc.losses)
			K := make([]float64, m*m)
			for i := 0; i < m; i++ {
				for j := 0; j < m; j++ {
					for k := 0; k < n; k++ {
						K[i*m+j] += float64(J.Row(i)[k]) * float64(J.Row(j)[k])
					}
				}
			}
			feasible, objective := epoProgram(K, a, tc.r, tc.losses, tc.mode)
			if !feasible(info.Beta, 1e-9) {
				t.Errorf("β = %v (rates Kβ = %v) violates the %s constraints", info.Beta, rate, tc.mode)
			}
			// The LP's value must beat every feasible point of a grid on
			// the simplex, and come within the grid's resolution of the best.
			got, best := objective(info.Beta), math.Inf(-1)
			eachSimplexPoint(m, 400, func(beta []float64) {
				if feasible(beta, 0) {
					best = math.Max(best, objective(beta))
				}
			})
			// (At a Pareto-stationary point the feasible set is a single
			// point off the grid.)
			if tc.name != "descent-front" && (best > got+1e-9 || got-best > 2e-2) {
				t.Errorf("LP value %.9g, best feasible grid point %.9g", got, best)
			}
			if tc.name == "descent-front" && info.VNorm > 1e-6 {
				t.Errorf("at a Pareto-stationary balanced point ‖v‖ = %g, want 0", info.VNorm)
			}
		})
	}
}

func TestEPOErrors(t *testing.T) {
	J := NewJacobian(2, 2)
	copy(J.Data, []float32{1, 0, 0, 1})
	dst := make([]float32, 2)
	for _, tc := range []struct {
		name   string
		e      EPO
		losses []float64
		want   string
	}{
		{"no-losses", EPO{}, nil, "needs the 2 task losses"},
		{"preference-length", EPO{Preference: []float64{1}}, []float64{1, 1}, "1 preference weights for 2 tasks"},
		{"preference-zero", EPO{Preference: []float64{1, 0}}, []float64{1, 1}, "Preference[1] = 0"},
		{"zero-loss", EPO{}, []float64{0.5, 0}, "task 1 has r·ℓ"},
		{"negative-loss", EPO{}, []float64{-0.5, 1}, "task 0 has r·ℓ"},
		{"nan-loss", EPO{}, []float64{math.NaN(), 1}, "task 0 has r·ℓ"},
		{"eps", EPO{Eps: -1}, []float64{1, 1}, "EPO.Eps = -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.e.Direction(dst, J, Gradient{Losses: tc.losses}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// epoProgram states EPO's linear program (the paper's constraints, written
// out here independently of epoBalance and epoDescent) for mode "balance"
// or "descent" (restricted): feasible(β, tol) checks β against the simplex
// and the rows, objective(β) is the value to maximise.
func epoProgram(K, a, r, losses []float64, mode string) (feasible func([]float64, float64) bool, objective func([]float64) float64) {
	m := len(a)
	Kx := func(x []float64, j int) float64 {
		var s float64
		for k := 0; k < m; k++ {
			s += K[j*m+k] * x[k]
		}
		return s
	}
	Ca := make([]float64, m)
	for j := range Ca {
		Ca[j] = Kx(a, j)
	}
	top, anyPos, maxCa := 0.0, false, math.Inf(-1)
	for j := range r {
		top = math.Max(top, r[j]*losses[j])
		anyPos = anyPos || Ca[j] > 0
		maxCa = math.Max(maxCa, Ca[j])
	}
	dot := func(x, y []float64) float64 {
		var s float64
		for i := range x {
			s += x[i] * y[i]
		}
		return s
	}
	feasible = func(beta []float64, tol float64) bool {
		var sum float64
		for _, b := range beta {
			if b < -tol {
				return false
			}
			sum += b
		}
		if math.Abs(sum-1) > tol+1e-12 {
			return false
		}
		for j := 0; j < m; j++ {
			rate := Kx(beta, j)
			switch {
			case mode == "descent" || !anyPos || r[j]*losses[j] == top:
				if rate < -tol {
					return false
				}
			case Ca[j] <= 0:
				if rate < Ca[j]-tol {
					return false
				}
			}
		}
		return mode != "descent" || dot(beta, Ca) >= math.Min(0, maxCa)-tol
	}
	objective = func(beta []float64) float64 {
		if mode == "descent" {
			var s float64
			for j := 0; j < m; j++ {
				s += Kx(beta, j)
			}
			return s
		}
		return dot(beta, Ca)
	}
	return feasible, objective
}

// eachSimplexPoint calls f with every point of the simplex in m dimensions
// whose coordinates are multiples of 1/steps.
func eachSimplexPoint(m, steps int, f func([]float64)) {
	beta := make([]float64, m)
	var rec func(i, left int)
	rec = func(i, left int) {
		if i == m-1 {
			beta[i] = float64(left) / float64(steps)
			f(beta)
			return
		}
		for c := 0; c <= left; c++ {
			beta[i] = float64(c) / float64(steps)
			rec(i+1, left-c)
		}
	}
	rec(0, steps)
}
