package stepvec

import "math"

// Adam holds the constants of one Adam step: the moments' decays β1, β2,
// the bias corrections c1 = 1−β1ᵗ and c2 = 1−β2ᵗ of the step t and ε.
type Adam struct{ B1, B2, C1, C2, Eps float64 }

// NewAdam returns Adam's constants at step t (t = 1 at the first update).
func NewAdam(b1, b2, eps float64, t int) Adam {
	return Adam{B1: b1, B2: b2, C1: 1 - math.Pow(b1, float64(t)), C2: 1 - math.Pow(b2, float64(t)), Eps: eps}
}

// r0 is Bound's part that does not depend on the moments, b²/d with
// b = (1−β1)/c1 and d = (1−β2)/c2.
func (a Adam) r0() float64 {
	b, d := (1-a.B1)/a.C1, (1-a.B2)/a.C2
	return b * b / d
}

// Bound returns the largest step, per unit learning rate, that Adam can
// take on one coordinate from the moments m0 and w0 before the step, over
// every gradient it might be handed (finetune's adamBound):
// √(a²/c + b²/d) with a = β1·m0/c1, c = β2·w0/c2, √(b²/d) when m0 = 0.
// Where that is infinite or past float32's range (m0 ≠ 0 with c = 0: a
// second moment that underflowed while the first did not) and ε > 0, it is
// max(|a|/ε, √(b²/d)) instead, which also bounds the step: with √(c+dg²)
// ≥ √d·|g|, |a + b·g|/(√(c+dg²) + ε) ≤ (|a| + b|g|)/(√d|g| + ε), a ratio
// of two linear functions of |g| that moves monotonically from |a|/ε to
// b/√d. A finite bound keeps the tolerance of PNG's bounded dual, which
// scales with Σ|J|·bound, finite.
func (a Adam) Bound(m0, w0 float64) float64 { return bound(a.consts(), m0, w0) }

// consts are an Adam step's constants as the kernels read them (the
// field order is consts_amd64.h's: TestConstsLayout).
type consts struct {
	b1, omb1, b2, omb2, c1, c2, eps, r0, one, inf float64
	// rmax is the largest r = a²/c + b²/d whose root Bound returns (the
	// square of float32's largest value; +Inf when ε ≤ 0, which gives no
	// other bound), and sr0 is √r0.
	rmax, sr0 float64
}

func (a Adam) consts() *consts {
	return &consts{b1: a.B1, omb1: 1 - a.B1, b2: a.B2, omb2: 1 - a.B2, c1: a.C1, c2: a.C2, eps: a.Eps,
		r0: a.r0(), one: 1, inf: math.Inf(1), rmax: rmax(a.Eps), sr0: math.Sqrt(a.r0())}
}

// rmax is consts.rmax for ε.
func rmax(eps float64) float64 {
	if eps > 0 {
		return float64(math.MaxFloat32) * float64(math.MaxFloat32)
	}
	return math.Inf(1)
}

// bound is Bound with the constants computed.
func bound(c *consts, m0, w0 float64) float64 {
	r := c.r0
	if m0 != 0 {
		a, cc := c.b1*m0/c.c1, c.b2*w0/c.c2
		if cc == 0 {
			r = math.Inf(1)
		} else {
			r += a * a / cc
		}
		if r > c.rmax {
			return max(math.Abs(a)/c.eps, c.sr0)
		}
	}
	return math.Sqrt(r)
}
