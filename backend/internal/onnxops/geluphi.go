package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/vmath"
)

// The normal distribution function Φ(x) = ½(1 + erf(x/√2)) of a block of
// values, for the float32 GELU kernels (gelu.go), without a call of
// math.Erf per element and without a branch per element.
//
// With z = |x|/√2 and t = 1/(1 + z/2), erfc(z) = t·exp(−z² + P(t)), the
// form of Numerical Recipes' erfcc, with P a polynomial of degree 12 in
// u = (30t − 17)/13 fitted to erfc over z in [0, 13] (testdata/fit_phi.py):
// its error is the relative error of erfc, about 3e-10. Then Φ(x) is
// ½erfc(z) for x < 0 and 1 − ½erfc(z) otherwise, chosen by the sign bit,
// so Φ keeps its relative accuracy in the lower tail, where 1 + erf
// cancels. Beyond z = 13 (|x| > 18.4) u is held at −1: Φ is then 1 or
// below 1e-74, which float32 GELU rounds to 0 either way. Every element
// takes the same path: one division, the polynomial and an exponential of
// the whole block in vmath.Exp64's vector kernel (TestPhiBlockAccuracy).

const (
	phiC0  = -0.581380562493238
	phiC1  = 0.5916626699974751
	phiC2  = 0.020841413111728598
	phiC3  = -0.03289625404719126
	phiC4  = -0.002096077723169684
	phiC5  = 0.0045776534424116985
	phiC6  = -0.00015836434709981604
	phiC7  = -0.0007761700976594124
	phiC8  = 0.00016337089830920922
	phiC9  = 0.0001170534318865648
	phiC10 = -5.1757445625799925e-05
	phiC11 = -1.0808032395151519e-05
	phiC12 = 7.833410954891054e-06
)

// phiBlock sets phi[i] = Φ(x[i]) for i < len(phi); x holds at least
// len(phi) elements and does not overlap phi.
func phiBlock(phi, x []float64) {
	x = x[:len(phi)]
	var tb [geluBlock]float64
	for b0 := 0; b0 < len(phi); b0 += geluBlock {
		b1 := min(len(phi), b0+geluBlock)
		p, xs, ts := phi[b0:b1], x[b0:b1], tb[:b1-b0]
		for i, v := range xs {
			t := 1 / (1 + math.Abs(v)*(0.5/math.Sqrt2))
			u := max(t*(30.0/13)-17.0/13, -1)
			// Estrin's scheme: four levels of products instead of Horner's
			// twelve dependent steps, so consecutive elements overlap.
			u2 := u * u
			u4 := u2 * u2
			q := ((phiC0 + phiC1*u) + (phiC2+phiC3*u)*u2) + ((phiC4+phiC5*u)+(phiC6+phiC7*u)*u2)*u4 +
				(((phiC8+phiC9*u)+(phiC10+phiC11*u)*u2)+phiC12*u4)*(u4*u4)
			ts[i] = t
			p[i] = q - 0.5*(v*v)
		}
		vmath.Exp64(p, p)
		for i, v := range xs {
			c := 0.5 * ts[i] * p[i] // ½erfc(|x|/√2)
			neg := float64(math.Float64bits(v) >> 63)
			p[i] = (1 - neg) + (2*neg-1)*c // c for x < 0, 1 − c otherwise
		}
	}
}
