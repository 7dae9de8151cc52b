package synthetic

import "math"

// zdt2vDim is the dimension of θ in zdt2v.
const zdt2vDim = 3

// ZDT2V returns the ZDT2 variant of Ma et al. (2020) in n = 3 dimensions,
// starting at DefaultInit(3):
//
//	x'1 = ½ sin(x1 + x2² + x3²) + ½,  x'2 = x'3 = ½ cos(x2² + x3²) + ½,
//	ℓ1 = x'1,  g = 1 + 4.5 (x'2 + x'3),  ℓ2 = g (1 − (x'1/g)²).
//
// The Pareto set is where g = 1 (x2² + x3² = π mod 2π); its front is
// ℓ2 = 1 − ℓ1², ℓ1 ∈ [0, 1].
func ZDT2V() *Problem {
	return &Problem{name: "zdt2v", theta: DefaultInit(zdt2vDim), eval: zdt2vEval}
}

func zdt2vEval(x, g1, g2 []float64) (l1, l2 float64) {
	s := x[1]*x[1] + x[2]*x[2]
	u := x[0] + s
	p1 := 0.5*math.Sin(u) + 0.5
	p2 := 0.5*math.Cos(s) + 0.5
	g := 1 + 9*p2 // 1 + 4.5(x'2 + x'3) with x'2 = x'3
	l1 = p1
	l2 = g - p1*p1/g
	// ∂x'1/∂x = ½cos(u)·(1, 2x2, 2x3); ∂x'2/∂x = −½sin(s)·(0, 2x2, 2x3).
	dp1 := [3]float64{0.5 * math.Cos(u), math.Cos(u) * x[1], math.Cos(u) * x[2]}
	dp2 := [3]float64{0, -math.Sin(s) * x[1], -math.Sin(s) * x[2]}
	for i := range 3 {
		dg := 9 * dp2[i]
		if g1 != nil {
			g1[i] = dp1[i]
		}
		if g2 != nil {
			g2[i] = dg*(1+p1*p1/(g*g)) - 2*p1*dp1[i]/g
		}
	}
	return l1, l2
}

// ZDT2VGap returns g(θ) − 1 ≥ 0 for zdt2v at θ (length 3): zero exactly on
// the Pareto set. ℓ2 exceeds the front value 1 − ℓ1² by
// (g − 1)(1 + ℓ1²/g), which lies between g − 1 and 2(g − 1).
func ZDT2VGap(theta []float64) float64 {
	s := theta[1]*theta[1] + theta[2]*theta[2]
	return 9 * (0.5*math.Cos(s) + 0.5)
}
