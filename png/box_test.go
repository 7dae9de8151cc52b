package png

import (
	"math"
	"slices"
	"testing"
)

// boxFor returns a bound that holds prop (as an optimizer's own step does)
// and leaves room for a correction of about frac times the unbounded
// update's mean size: tight enough that the unbounded update leaves it
// where the metric is wild.
func boxFor(prop, u0 []float32, frac float64) []float32 {
	var mean float64
	for _, x := range u0 {
		mean += math.Abs(float64(x))
	}
	mean /= float64(len(u0))
	R := make([]float32, len(prop))
	for c, x := range prop {
		R[c] = float32(math.Abs(float64(x)) + frac*mean)
	}
	return R
}

// TestConstrainBound checks the metric QP within a per-coordinate bound on
// random instances: the update lies within the bound; it is
// clip(prop + P∘Jᵀλ, −R, R) with λ ≥ 0, every task decreasing at rate
// ≥ φ_P and λ_i > 0 only where that is tight (the KKT conditions of the
// bounded problem, so the update is its minimiser); φ_P is at most α·ρ·g_P,
// and where it is lower, at most α times the rate of the min-norm update
// clipped to the box, computed here independently; and a bound the
// unbounded update never reaches changes nothing.
func TestConstrainBound(t *testing.T) {
	var clippedCases, cases int
	for _, c := range metricCases(31) {
		for _, ar := range [][2]float64{{0.5, 1}, {0.5, 0.3}, {2, 1}} {
			alpha, rho := ar[0], ar[1]
			p := PNG{Settings{Alpha: alpha, Workers: 2}}
			u0 := make([]float32, c.J.N)
			free, err := p.Constrain(u0, c.J, c.prop, c.metric, nil, rho)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			// A bound the unbounded update stays within: the same answer.
			loose := make([]float32, c.J.N)
			for k, x := range u0 {
				loose[k] = float32(math.Max(math.Abs(float64(x)), math.Abs(float64(c.prop[k])))*2 + 1e-30)
			}
			uLoose := make([]float32, c.J.N)
			li, err := p.Constrain(uLoose, c.J, c.prop, c.metric, loose, rho)
			if err != nil || !slices.Equal(uLoose, u0) || li.Phi != free.Phi || li.Clipped != 0 {
				t.Errorf("%s α=%v ρ=%v: a loose bound changed the update (err %v, φ %v vs %v, %d clipped)", c.name, alpha, rho, err, li.Phi, free.Phi, li.Clipped)
			}
			for _, frac := range []float64{0.3, 0.05} {
				cases++
				R := boxFor(c.prop, u0, frac)
				u := make([]float32, c.J.N)
				info, err := p.Constrain(u, c.J, c.prop, c.metric, R, rho)
				if err != nil {
					t.Fatalf("%s α=%v ρ=%v frac %v: %v", c.name, alpha, rho, frac, err)
				}
				if info.Clipped > 0 {
					clippedCases++
				}
				checkBoxed(t, c, u, R, info, alpha, rho)
			}
		}
	}
	t.Logf("%d of %d bounded cases clipped the update", clippedCases, cases)
	if clippedCases < cases/4 {
		t.Errorf("only %d of %d cases clipped: the bound is not exercised", clippedCases, cases)
	}
}

// TestConstrainOverProp checks that Constrain may write its update over
// prop (the training loop keeps one buffer for both): bounded and
// unbounded, the update and the report are those of a separate dst, bit
// for bit.
func TestConstrainOverProp(t *testing.T) {
	for _, c := range metricCases(7) {
		p := PNG{Settings{Alpha: 0.5, Workers: 2}}
		u0 := make([]float32, c.J.N)
		if _, err := p.Constrain(u0, c.J, c.prop, c.metric, nil, 1); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, R := range [][]float32{nil, boxFor(c.prop, u0, 0.05)} {
			want := make([]float32, c.J.N)
			wi, werr := p.Constrain(want, c.J, c.prop, c.metric, R, 1)
			got := slices.Clone(c.prop)
			gi, gerr := p.Constrain(got, c.J, got, c.metric, R, 1)
			if (werr == nil) != (gerr == nil) || !slices.Equal(got, want) || wi.Phi != gi.Phi || !slices.Equal(wi.Lambda, gi.Lambda) || wi.Clipped != gi.Clipped {
				t.Errorf("%s (bounded %v): over prop %v (%v), separate %v (%v)", c.name, R != nil, gi, gerr, wi, werr)
			}
		}
	}
}

// checkBoxed checks the KKT conditions of Constrain's bounded problem and
// its rate.
func checkBoxed(t *testing.T, c metricCase, u, R []float32, info MetricInfo, alpha, rho float64) {
	t.Helper()
	m, n := c.J.M, c.J.N
	K := metricGram64(c.J, c.metric)
	omega, g := MinNorm(K, m)
	if info.Phi > alpha*rho*g*(1+1e-9)+1e-300 {
		t.Errorf("%s: φ_P = %v > α·ρ·g_P = %v", c.name, info.Phi, alpha*rho*g)
	}
	// The min-norm update clipped to the box, and its rate.
	q := make([]float64, m)
	for k := 0; k < n; k++ {
		var s float64
		for i := 0; i < m; i++ {
			s += omega[i] * float64(c.J.Row(i)[k])
		}
		if c.metric != nil {
			s *= float64(c.metric[k])
		}
		x := math.Max(-float64(R[k]), math.Min(float64(R[k]), rho*s))
		for i := 0; i < m; i++ {
			q[i] += float64(c.J.Row(i)[k]) * x
		}
	}
	reach := math.Max(0, slices.Min(q))
	if lowered := info.Phi < alpha*rho*g*(1-1e-12); lowered && info.Phi > alpha*reach*(1+1e-6)+1e-12*alpha*rho*g {
		t.Errorf("%s: φ_P = %v above α × the clipped min-norm update's rate %v", c.name, info.Phi, alpha*reach)
	}
	dots, norms := jv(c.J, u)
	un := norm32(u)
	for i := range dots {
		var top float64
		for k, x := range c.J.Row(i) {
			top += math.Abs(float64(x)) * float64(R[k])
		}
		tol := vRelTol*norms[i]*un + 1e-7*top
		viol := info.Phi - dots[i]
		if viol > tol {
			t.Errorf("%s α=%v ρ=%v: ∇ℓ_%dᵀu = %.10g < φ_P = %.10g", c.name, alpha, rho, i, dots[i], info.Phi)
		}
		if info.Lambda[i] < 0 || (info.Lambda[i] > 0 && math.Abs(viol) > tol) {
			t.Errorf("%s α=%v ρ=%v: λ_%d = %g with ∇ℓ_iᵀu − φ_P = %g", c.name, alpha, rho, i, info.Lambda[i], -viol)
		}
	}
	clipped := 0
	for k := range u {
		if math.Abs(float64(u[k])) > float64(R[k]) {
			t.Fatalf("%s: |u[%d]| = %v beyond the bound %v", c.name, k, u[k], R[k])
		}
		var s float64
		for i, l := range info.Lambda {
			s += l * float64(c.J.Row(i)[k])
		}
		if c.metric != nil {
			s *= float64(c.metric[k])
		}
		free := float64(c.prop[k]) + s
		want := math.Max(-float64(R[k]), math.Min(float64(R[k]), free))
		if want != free {
			clipped++
		}
		if math.Abs(float64(u[k])-want) > vRelTol*(math.Abs(want)+un/math.Sqrt(float64(len(u)))) {
			t.Fatalf("%s: u[%d] = %v, want clip(prop + P∘Jᵀλ) = %v", c.name, k, u[k], want)
		}
	}
	if clipped != info.Clipped {
		t.Errorf("%s: %d coordinates at the bound, MetricInfo.Clipped = %d", c.name, clipped, info.Clipped)
	}
}

// TestConstrainBoundHeavyPull is the case that made the bound necessary:
// a proposal pulling against every task (a heavily weighted drift toward
// the start raising both losses) in a metric that is huge on coordinates
// whose gradient history is tiny. Unbounded, the correction moves those
// coordinates by far more than the optimizer ever would; bounded, no
// coordinate leaves the box and every loss still falls.
func TestConstrainBoundHeavyPull(t *testing.T) {
	const n = 200
	J := NewJacobian(2, n)
	prop, P, R := make([]float32, n), make([]float32, n), make([]float32, n)
	for k := 0; k < n; k++ {
		a := float32(0.01 * float64(1+k%7))
		J.Row(0)[k], J.Row(1)[k] = a, 2*a
		P[k], R[k] = 0.05, 1.1
		prop[k] = -1 // Adam's sign-like step toward θ₀: against both tasks
		if k%10 == 0 {
			// tasks that nearly cancel in ∇F, each coordinate in its own
			// ratio: Adam's memory is tiny there
			J.Row(1)[k] = -float32(0.7+0.2*float64(k/10%4)) * J.Row(0)[k]
			P[k], prop[k] = 1e5, 0
		}
	}
	p := PNG{Settings{Workers: 1}}
	u0 := make([]float32, n)
	if _, err := p.Constrain(u0, J, prop, P, nil, 1); err != nil {
		t.Fatal(err)
	}
	var top float64
	for _, x := range u0 {
		top = math.Max(top, math.Abs(float64(x)))
	}
	if top < 10 {
		t.Fatalf("unbounded update moves at most %v: the case does not show the problem", top)
	}
	u := make([]float32, n)
	info, err := p.Constrain(u, J, prop, P, R, 1)
	if err != nil {
		t.Fatal(err)
	}
	for k, x := range u {
		if math.Abs(float64(x)) > float64(R[k]) {
			t.Fatalf("u[%d] = %v beyond the bound %v", k, x, R[k])
		}
	}
	dots, _ := jv(J, u)
	for i, d := range dots {
		if !(d > 0) || d < info.Phi*(1-1e-6) {
			t.Errorf("∇ℓ_%dᵀu = %v, want ≥ φ_P = %v > 0", i, d, info.Phi)
		}
	}
	t.Logf("unbounded: max |u| = %.4g; bounded: %d coordinates at the bound, φ_P = %.4g", top, info.Clipped, info.Phi)
}

func TestConstrainBoundErrors(t *testing.T) {
	J := Jacobian{M: 2, N: 3, Data: []float32{1, 0, 0, 0, 1, 0}}
	prop := []float32{1, 1, 1}
	nan := float32(math.NaN())
	for _, R := range [][]float32{{1, 0, 1}, {1, -1, 1}, {1, nan, 1}} {
		if _, err := (PNG{}).Constrain(make([]float32, 3), J, prop, nil, R, 1); err == nil {
			t.Errorf("bound %v: no error", R)
		}
	}
}
