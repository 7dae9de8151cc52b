package synthetic

import "math"

// exp2Dim is the dimension of θ in exp2.
const exp2Dim = 10

// Exp2 returns the exp2 problem in n = 10 dimensions, starting at
// DefaultInit(10):
//
//	ℓ1 = 1 − exp(−‖θ − η‖²),  ℓ2 = 1 − exp(−‖θ + η‖²),  η = n^{-1/2}·1.
//
// Its Pareto set is the segment {tη : t ∈ [−1, 1]} (see Exp2Point).
func Exp2() *Problem {
	return &Problem{name: "exp2", theta: DefaultInit(exp2Dim), eval: exp2Eval}
}

func exp2Eval(x, g1, g2 []float64) (l1, l2 float64) {
	eta := 1 / math.Sqrt(float64(len(x)))
	var d1, d2 float64
	for _, v := range x {
		d1 += (v - eta) * (v - eta)
		d2 += (v + eta) * (v + eta)
	}
	e1, e2 := math.Exp(-d1), math.Exp(-d2)
	if g1 != nil {
		for i, v := range x {
			g1[i] = 2 * (v - eta) * e1
		}
	}
	if g2 != nil {
		for i, v := range x {
			g2[i] = 2 * (v + eta) * e2
		}
	}
	return 1 - e1, 1 - e2
}

// Exp2Point returns the losses (ℓ1, ℓ2) of exp2 at the Pareto-optimal
// θ = tη, t ∈ [−1, 1]: ℓ1 = 1 − exp(−(1 − t)²), ℓ2 = 1 − exp(−(1 + t)²).
// t = 1 minimises ℓ1, t = −1 minimises ℓ2.
func Exp2Point(t float64) [2]float64 {
	return [2]float64{1 - math.Exp(-(1-t)*(1-t)), 1 - math.Exp(-(1+t)*(1+t))}
}

// Exp2ParetoDistance returns the Euclidean distance from θ (any dimension
// n ≥ 1, η = n^{-1/2}·1) to the Pareto set {tη : t ∈ [−1, 1]}.
func Exp2ParetoDistance(theta []float64) float64 {
	eta := 1 / math.Sqrt(float64(len(theta)))
	var t float64
	for _, v := range theta {
		t += v * eta
	}
	t = math.Max(-1, math.Min(1, t))
	var d float64
	for _, v := range theta {
		d += (v - t*eta) * (v - t*eta)
	}
	return math.Sqrt(d)
}
