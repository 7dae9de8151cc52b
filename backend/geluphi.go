package backend

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/vmath"
)

// The normal distribution function Φ(x) = ½(1 + erf(x/√2)) of a block of
// values, for GELU (gelu.go), without a call of math.Erf per element.
//
// The rational approximations are math.Erf's and math.Erfc's (FreeBSD's
// s_erf.c, as Go's math package has them) on the same intervals of
// a = |x|/√2: a < 0.84375, a < 1.25, a < 28. Two things differ. The
// exponential of the tails, which math.Erf forms as the product of two
// calls of math.Exp (to hold a² exactly in float64), is one exp(−a² −
// 0.5625 + R/S) with a² = x²/2 rounded once, and the exponentials of a
// whole block run at once in vmath.Exp64's vector kernel: the rounding of
// a² costs at most a²·2⁻⁵³ relative (9e-14 at a = 28, where Φ is 1e-342;
// 1e-14 where float32 GELU is not 0), far below float32's 6e-8. And for x < 0 in
// the tails Φ is ½erfc(a) itself rather than ½(1 − erf(a)), so it keeps its
// relative accuracy where 1 + erf cancels (TestPhiBlockAccuracy).

// phiBlock sets phi[i] = Φ(x[i]) for i < len(phi) and, when ex is not
// nil, ex[i] = exp(−x[i]²/2) (so that φ(x) = ex/√(2π)). x, phi and ex
// must not overlap and x and ex hold at least len(phi) elements.
func phiBlock(phi, ex, x []float64) {
	x = x[:len(phi)]
	// Pass 1: the exponent of each tail element (0 for the others).
	for i, v := range x {
		a := math.Abs(v) * math.Sqrt2 / 2
		e := 0.0
		if a >= 1.25 && a < 28 {
			s := 1 / (a * a)
			var r, q float64
			if a < 1/0.35 {
				r = erfRA0 + s*(erfRA1+s*(erfRA2+s*(erfRA3+s*(erfRA4+s*(erfRA5+s*(erfRA6+s*erfRA7))))))
				q = 1 + s*(erfSA1+s*(erfSA2+s*(erfSA3+s*(erfSA4+s*(erfSA5+s*(erfSA6+s*(erfSA7+s*erfSA8)))))))
			} else {
				r = erfRB0 + s*(erfRB1+s*(erfRB2+s*(erfRB3+s*(erfRB4+s*(erfRB5+s*erfRB6)))))
				q = 1 + s*(erfSB1+s*(erfSB2+s*(erfSB3+s*(erfSB4+s*(erfSB5+s*(erfSB6+s*erfSB7))))))
			}
			e = -0.5*(v*v) - 0.5625 + r/q // −a², rounded once
		}
		phi[i] = e
	}
	vmath.Exp64(phi, phi)
	if ex != nil {
		ex = ex[:len(phi)]
		for i, v := range x {
			ex[i] = -0.5 * (v * v)
		}
		vmath.Exp64(ex, ex)
	}
	// Pass 2: Φ from the interval's approximation.
	for i, v := range x {
		a := math.Abs(v) * math.Sqrt2 / 2
		var p float64
		switch {
		case a < 0.84375: // erf(a) = a + a·P(a²)/Q(a²)
			z := a * a
			r := erfPP0 + z*(erfPP1+z*(erfPP2+z*(erfPP3+z*erfPP4)))
			s := 1 + z*(erfQQ1+z*(erfQQ2+z*(erfQQ3+z*(erfQQ4+z*erfQQ5))))
			e := a + a*(r/s)
			if v < 0 {
				e = -e
			}
			p = 0.5 + 0.5*e
		case a < 1.25: // erf(a) = erx + P(a−1)/Q(a−1)
			s := a - 1
			r := erfPA0 + s*(erfPA1+s*(erfPA2+s*(erfPA3+s*(erfPA4+s*(erfPA5+s*erfPA6)))))
			q := 1 + s*(erfQA1+s*(erfQA2+s*(erfQA3+s*(erfQA4+s*(erfQA5+s*erfQA6)))))
			e := erfErx + r/q
			if v < 0 {
				p = 0.5 - 0.5*e
			} else {
				p = 0.5 + 0.5*e
			}
		case a < 28: // erfc(a) = exp(−a² − 0.5625 + R(1/a²)/S(1/a²))/a
			c := 0.5 * phi[i] / a
			if v < 0 {
				p = c
			} else {
				p = 1 - c
			}
		case v > 0: // +Inf included
			p = 1
		case v < 0:
			p = 0
		default: // NaN
			p = v
		}
		phi[i] = p
	}
}

// Coefficients of math.Erf's and math.Erfc's rational approximations
// (Go's math/erf.go, from FreeBSD's s_erf.c).
const (
	erfErx = 8.45062911510467529297e-01
	// erf in [0, 0.84375]
	erfPP0 = 1.28379167095512558561e-01
	erfPP1 = -3.25042107247001499370e-01
	erfPP2 = -2.84817495755985104766e-02
	erfPP3 = -5.77027029648944159157e-03
	erfPP4 = -2.37630166566501626084e-05
	erfQQ1 = 3.97917223959155352819e-01
	erfQQ2 = 6.50222499887672944485e-02
	erfQQ3 = 5.08130628187576562776e-03
	erfQQ4 = 1.32494738004321644526e-04
	erfQQ5 = -3.96022827877536812320e-06
	// erf in [0.84375, 1.25]
	erfPA0 = -2.36211856075265944077e-03
	erfPA1 = 4.14856118683748331666e-01
	erfPA2 = -3.72207876035701323847e-01
	erfPA3 = 3.18346619901161753674e-01
	erfPA4 = -1.10894694282396677476e-01
	erfPA5 = 3.54783043256182359371e-02
	erfPA6 = -2.16637559486879084300e-03
	erfQA1 = 1.06420880400844228286e-01
	erfQA2 = 5.40397917702171048937e-01
	erfQA3 = 7.18286544141962662868e-02
	erfQA4 = 1.26171219808761642112e-01
	erfQA5 = 1.36370839120290507362e-02
	erfQA6 = 1.19844998467991074170e-02
	// erfc in [1.25, 1/0.35]
	erfRA0 = -9.86494403484714822705e-03
	erfRA1 = -6.93858572707181764372e-01
	erfRA2 = -1.05586262253232909814e+01
	erfRA3 = -6.23753324503260060396e+01
	erfRA4 = -1.62396669462573470355e+02
	erfRA5 = -1.84605092906711035994e+02
	erfRA6 = -8.12874355063065934246e+01
	erfRA7 = -9.81432934416914548592e+00
	erfSA1 = 1.96512716674392571292e+01
	erfSA2 = 1.37657754143519042600e+02
	erfSA3 = 4.34565877475229228821e+02
	erfSA4 = 6.45387271733267880336e+02
	erfSA5 = 4.29008140027567833386e+02
	erfSA6 = 1.08635005541779435134e+02
	erfSA7 = 6.57024977031928170135e+00
	erfSA8 = -6.04244152148580987438e-02
	// erfc in [1/0.35, 28]
	erfRB0 = -9.86494292470009928597e-03
	erfRB1 = -7.99283237680523006574e-01
	erfRB2 = -1.77579549177547519889e+01
	erfRB3 = -1.60636384855821916062e+02
	erfRB4 = -6.37566443368389627722e+02
	erfRB5 = -1.02509513161107724954e+03
	erfRB6 = -4.83519191608651397019e+02
	erfSB1 = 3.03380607434824582924e+01
	erfSB2 = 3.25792512996573918826e+02
	erfSB3 = 1.53672958608443695994e+03
	erfSB4 = 3.19985821950859553908e+03
	erfSB5 = 2.55305040643316442583e+03
	erfSB6 = 4.74528541206955367215e+02
	erfSB7 = -2.24409524465858183362e+01
)
