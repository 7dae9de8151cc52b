package vmath

import "math"

// The normal distribution function Φ(x) = ½(1 + erf(x/√2)) of a block of
// values, for the float32 GELU kernels, without a call of math.Erf per
// element and without a branch per element.
//
// With z = |x|/√2 and t = 1/(1 + z/2), erfc(z) = t·exp(−z² + P(t)), the
// form of Numerical Recipes' erfcc, with P a polynomial of degree 12 in
// u = (30t − 17)/13 fitted to erfc over z in [0, 13]
// (backend/internal/onnxops/testdata/fit_phi.py): its error is the
// relative error of erfc, about 3e-10. Then Φ(x) is ½erfc(z) for x < 0
// and 1 − ½erfc(z) otherwise, chosen by the sign bit, so Φ keeps its
// relative accuracy in the lower tail, where 1 + erf cancels. Beyond
// z = 13 (|x| > 18.4) u is held at −1: Φ is then 1 or below 1e-74, which
// float32 GELU rounds to 0 either way. Every element takes the same path:
// one division, the polynomial and an exponential of the whole block in
// Exp64's vector kernel.

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

// PhiBlock is how many values Phi64 and Gelu32 hold in their temporaries
// at a time.
const PhiBlock = 256

// Phi64 sets phi[i] = Φ(x[i]) for i < len(phi); x holds at least
// len(phi) elements and does not overlap phi.
func Phi64(phi, x []float64) {
	x = x[:len(phi)]
	var tb [PhiBlock]float64
	for b0 := 0; b0 < len(phi); b0 += PhiBlock {
		b1 := min(len(phi), b0+PhiBlock)
		p, xs, ts := phi[b0:b1], x[b0:b1], tb[:b1-b0]
		for i, v := range xs {
			t, q := phiPoly(v)
			ts[i] = t
			p[i] = q
		}
		Exp64(p, p)
		for i, v := range xs {
			p[i] = phiFinish(v, ts[i], p[i])
		}
	}
}

// phiPoly returns t = 1/(1 + |v|/(2√2)) and the exponent −v²/2 + P(u)
// of Φ(v)'s ½erfc(|v|/√2) = ½t·exp(·).
func phiPoly(v float64) (t, q float64) {
	t = 1 / (1 + math.Abs(v)*(0.5/math.Sqrt2))
	u := max(t*(30.0/13)-17.0/13, -1)
	// Estrin's scheme: four levels of products instead of Horner's
	// twelve dependent steps, so consecutive elements overlap.
	u2 := u * u
	u4 := u2 * u2
	q = ((phiC0 + phiC1*u) + (phiC2+phiC3*u)*u2) + ((phiC4+phiC5*u)+(phiC6+phiC7*u)*u2)*u4 +
		(((phiC8+phiC9*u)+(phiC10+phiC11*u)*u2)+phiC12*u4)*(u4*u4)
	return t, q - 0.5*(v*v)
}

// phiFinish returns Φ(v) from phiPoly's t and the exponential e of its
// exponent: c = ½erfc(|v|/√2) for v < 0 (by the sign bit), 1 − c
// otherwise.
func phiFinish(v, t, e float64) float64 {
	c := 0.5 * t * e
	neg := float64(math.Float64bits(v) >> 63)
	return (1 - neg) + (2*neg-1)*c
}

// Gelu32 sets dst[i] = float32(x·Φ(x)) for x = float64(x[i]), i <
// len(dst), with Φ as Phi64 computes it and the product rounded once.
// On amd64 with AVX-512F the whole vectors run a kernel that repeats
// Phi64's operations lane by lane in the same order (no fused
// multiply-adds), and Exp64's vector kernel: the same bits as the scalar
// loop (TestGelu32KernelsMatch). x holds at least len(dst) elements.
func Gelu32(dst, x []float32) {
	geluWith(active, dst, x)
}

// phiConsts are the constants of phiPoly and phiFinish in the order the
// vector kernels read them (gelu_amd64.s), each computed as the scalar
// code writes it.
var phiConsts = [20]float64{
	0.5 / math.Sqrt2, 30.0 / 13, 17.0 / 13, -1, 1, 0.5,
	phiC0, phiC1, phiC2, phiC3, phiC4, phiC5, phiC6, phiC7, phiC8, phiC9, phiC10, phiC11, phiC12,
	math.Float64frombits(1 << 63),
}

// geluWith is Gelu32 with kernel k.
func geluWith(k kernel, dst, x []float32) {
	x = x[:len(dst)]
	var xb, tb, pb [PhiBlock]float64
	for b0 := 0; b0 < len(dst); b0 += PhiBlock {
		b1 := min(len(dst), b0+PhiBlock)
		d, xs := dst[b0:b1], x[b0:b1]
		n := 0
		if k.hasGelu() {
			n = len(d) &^ 7
		}
		if n > 0 {
			k.geluPre(&tb[0], &pb[0], &xs[0], n)
			Exp64(pb[:n], pb[:n])
			k.geluPost(&d[0], &xs[0], &tb[0], &pb[0], n)
		}
		if n == len(d) {
			continue
		}
		d, xs = d[n:], xs[n:]
		xf, ts, ps := xb[:len(d)], tb[:len(d)], pb[:len(d)]
		for i, v := range xs {
			xf[i] = float64(v)
			ts[i], ps[i] = phiPoly(xf[i])
		}
		Exp64(ps, ps)
		for i, v := range xf {
			d[i] = float32(v * phiFinish(v, ts[i], ps[i]))
		}
	}
}

// invSqrt2Pi is 1/√(2π).
var invSqrt2Pi = 1 / math.Sqrt(2*math.Pi)

// GeluGrad32 sets dst[i] = float32(g·(Φ(x) + x·φ(x))) for x =
// float64(x[i]), g = float64(g[i]), i < len(dst), with Φ(x) = y[i]/x from
// the forward pass's output y = Gelu32(x) (½, 1 or 0 at x = ±0, +Inf,
// −Inf: the limits) and φ(x) = exp(−x²/2)/√(2π) by Exp64. On amd64 with
// AVX-512F the whole vectors run a kernel with the scalar loop's
// operations in its order: the same bits (TestGeluGrad32KernelsMatch).
// x, y and g hold at least len(dst) elements.
func GeluGrad32(dst, x, y, g []float32) { geluGradWith(active, dst, x, y, g) }

// geluGradConsts are GeluGrad32's constants in the order its vector
// kernel reads them: −0.5, 0.5, 1, +Inf, 1/√(2π), the sign bit.
var geluGradConsts = [6]float64{-0.5, 0.5, 1, math.Inf(1), invSqrt2Pi, math.Float64frombits(1 << 63)}

// geluGradWith is GeluGrad32 with kernel k.
func geluGradWith(k kernel, dst, x, y, g []float32) {
	x, y, g = x[:len(dst)], y[:len(dst)], g[:len(dst)]
	var ex [PhiBlock]float64
	for b0 := 0; b0 < len(dst); b0 += PhiBlock {
		b1 := min(len(dst), b0+PhiBlock)
		d, xs, ys, gs := dst[b0:b1], x[b0:b1], y[b0:b1], g[b0:b1]
		e := ex[:len(d)]
		n := 0
		if k.hasGelu() {
			n = len(d) &^ 7
		}
		if n > 0 {
			k.geluGradPre(&e[0], &xs[0], n)
		}
		for i, v := range xs[n:] {
			f := float64(v)
			e[n+i] = -0.5 * (f * f)
		}
		Exp64(e, e)
		if n > 0 {
			k.geluGradPost(&d[0], &xs[0], &ys[0], &gs[0], &e[0], n)
		}
		for i := n; i < len(d); i++ {
			f := float64(xs[i])
			var p float64
			switch {
			case f == 0:
				p = 0.5
			case math.IsInf(f, 0):
				p = max(0, math.Copysign(1, f))
			default:
				p = float64(ys[i]) / f
			}
			d[i] = float32(float64(gs[i]) * (p + f*e[i]*invSqrt2Pi))
		}
	}
}
