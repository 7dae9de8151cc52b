package png

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestTradeOK(t *testing.T) {
	tests := []struct {
		q    []float64
		M    float64
		want bool
	}{
		{[]float64{1, -1}, 10, true},           // one for one
		{[]float64{1, -10}, 10, true},          // at the bound
		{[]float64{1, -10.001}, 10, false},     // past it
		{[]float64{0, -1}, 10, false},          // raises only
		{[]float64{-1, -1, 0.05}, 10, false},   // 2 up, 0.05 down
		{[]float64{-1, -1, 0.25}, 10, true},    // 2 up, 2.5 allowed
		{[]float64{0, 0}, 10, true},            // moves no loss
		{[]float64{2, 3}, 10, true},            // lowers all
		{[]float64{1, -1.5}, 1, false},         // M = 1: one for one at most
		{[]float64{math.Inf(1), -1}, 10, true}, // infinite gain
	}
	for _, tt := range tests {
		if got := TradeOK(tt.q, tt.M); got != tt.want {
			t.Errorf("TradeOK(%v, %g) = %v, want %v", tt.q, tt.M, got, tt.want)
		}
	}
}

// TestPNGImproperTrade: with the control off (γ huge), a criterion step
// that only raises a loss is an improper trade; PNG turns the control on
// and no loss rises to first order. A proper trade is left alone, and
// without MaxTradeoff (the paper) neither is touched.
func TestPNGImproperTrade(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	nImproper := 0
	for trial := 0; trial < 50; trial++ {
		m, n := 2+trial%3, 20+trial
		J := randJacobian(rng, m, n)
		// Task 0's gradient nearly vanished (its loss at its floor).
		for k := 0; k < n; k++ {
			J.Data[k] *= 1e-4
		}
		// The criterion wants task 0 down and task 1 up: with ∇ℓ_0 ≈ 0
		// the free step can only raise ℓ_1.
		coef := make([]float64, m)
		coef[0], coef[1] = 1, -1
		grad := Gradient{Coef: coef}
		free := make([]float32, n)
		if _, err := (PNG{Settings{Gamma: 1e9}}).Direction(free, J, grad, nil); err != nil {
			t.Fatal(err)
		}
		q, _ := jv(J, free)
		improper := !TradeOK(q, 10)
		if improper {
			nImproper++
		}
		v := make([]float32, n)
		info, err := PNG{Settings{Gamma: 1e9, MaxTradeoff: 10}}.Direction(v, J, grad, nil)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if info.ControlOn != improper || info.Improper != improper {
			t.Fatalf("trial %d: free step rates %v: ControlOn %v, Improper %v; want %v", trial, q, info.ControlOn, info.Improper, improper)
		}
		if !improper {
			for k := range v {
				if v[k] != free[k] {
					t.Fatalf("trial %d: a proper trade changed the free step", trial)
				}
			}
			continue
		}
		dots, norms := jv(J, v)
		vn := norm32(v)
		for i, d := range dots {
			if d < info.Phi-1e-5*norms[i]*math.Max(vn, 1e-30) {
				t.Errorf("trial %d: ∇ℓ_%dᵀv = %g < φ = %g", trial, i, d, info.Phi)
			}
		}
	}
	if nImproper < 10 {
		t.Errorf("%d of 50 trials improper: the case tests too little", nImproper)
	}
	// A proper trade (one for one) stays free.
	J := NewJacobian(2, 2)
	copy(J.Data, []float32{1, 0, 0, 1})
	v := make([]float32, 2)
	info, err := PNG{Settings{Gamma: 1e9, MaxTradeoff: 10}}.Direction(v, J, Gradient{Coef: []float64{1, -1}}, nil)
	if err != nil || info.ControlOn || info.Improper || v[0] != 1 || v[1] != -1 {
		t.Errorf("proper trade: info %+v, v %v, err %v; want the free step (1, −1)", info, v, err)
	}
}

// TestPNGImproperStationary: at a Pareto-stationary point with opposite
// gradients an improper free step has no replacement that lowers a loss:
// the point holds still (v = 0, whether the dual finds that or is
// unbounded: Held).
func TestPNGImproperStationary(t *testing.T) {
	J := NewJacobian(2, 3)
	copy(J.Data, []float32{2, 0, 0, -0.1, 0, 0}) // ∇ℓ_1 = −0.05·∇ℓ_0
	v := []float32{9, 9, 9}
	// Energy-like push: ℓ_1 down, ℓ_0 up; the step raises ℓ_0 by 20× what
	// it lowers ℓ_1.
	info, err := PNG{Settings{Gamma: 1e9, MaxTradeoff: 10, Alpha: 0.5}}.Direction(v, J, Gradient{Coef: []float64{-1, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Improper || math.Abs(float64(v[0])) > 1e-6 || v[1] != 0 || v[2] != 0 {
		t.Errorf("info %+v, v %v; want improper, v = 0", info, v)
	}
}

// TestImproperUpdate checks the test on an optimizer's update.
func TestImproperUpdate(t *testing.T) {
	J := NewJacobian(2, 2)
	copy(J.Data, []float32{1, 0, 0, 1})
	tests := []struct {
		u    []float32
		M    float64
		want bool
	}{
		{[]float32{1, -1}, 10, false},
		{[]float32{0.01, -1}, 10, true},
		{[]float32{0.01, -1}, 0, false}, // no test
		{[]float32{-1, -1}, 10, true},
		{[]float32{1, 1}, 10, false},
	}
	for _, tt := range tests {
		if got := (PNG{Settings{MaxTradeoff: tt.M}}).ImproperUpdate(J, tt.u); got != tt.want {
			t.Errorf("ImproperUpdate(u = %v, M = %g) = %v, want %v", tt.u, tt.M, got, tt.want)
		}
	}
}

// TestConstrainNamesFirstBadValue checks, on vectors long enough to be
// checked in column ranges on several workers, that Constrain's error
// names the first bad metric or bound value, wherever the ranges fall, and
// that ImproperUpdate there gives what one worker gives.
func TestConstrainNamesFirstBadValue(t *testing.T) {
	const n = 6 * minColsPerWorker
	rng := rand.New(rand.NewPCG(5, 5))
	J := NewJacobian(2, n)
	for i := range J.Data {
		J.Data[i] = float32(rng.NormFloat64())
	}
	prop := make([]float32, n)
	for i := range prop {
		prop[i] = float32(rng.NormFloat64())
	}
	ones := func() []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	late, early := 5*minColsPerWorker+3, 10
	for _, tc := range []struct {
		name   string
		bad    []int
		bound  bool
		val    float32
		naming string
	}{
		{"metric, one late", []int{late}, false, float32(math.NaN()), "metric[" + itoa(late) + "]"},
		{"metric, early and late", []int{late, early}, false, 0, "metric[" + itoa(early) + "]"},
		{"bound, early and late", []int{late, early}, true, -1, "bound[" + itoa(early) + "]"},
	} {
		metric, bound := ones(), ones()
		v := metric
		if tc.bound {
			v = bound
		}
		for _, i := range tc.bad {
			v[i] = tc.val
		}
		p := PNG{Settings{Workers: 4}}
		_, err := p.Constrain(make([]float32, n), J, prop, metric, bound, 1)
		if err == nil || !strings.Contains(err.Error(), tc.naming+" =") {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.naming)
		}
	}
	for _, M := range []float64{0.5, 2, 10, 1e3} {
		many := PNG{Settings{MaxTradeoff: M, Workers: 4}}.ImproperUpdate(J, prop)
		one := PNG{Settings{MaxTradeoff: M, Workers: 1}}.ImproperUpdate(J, prop)
		if many != one {
			t.Errorf("ImproperUpdate with M = %g: %v on 4 workers, %v on one", M, many, one)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
