package stepvec

import (
	"math"
	"testing"
	"unsafe"
)

// TestBound checks Bound's cases: √(b²/d) (1 at the first step) with no
// first moment, +Inf with a first moment and no second, √(a²/c + b²/d)
// otherwise.
func TestBound(t *testing.T) {
	a := NewAdam(0.9, 0.999, 1e-8, 1)
	b := NewAdam(0.9, 0.999, 1e-8, 5)
	bb, d := 0.1/b.C1, 0.001/b.C2
	for _, tc := range []struct {
		a      Adam
		m0, w0 float64
		want   float64
	}{
		{a, 0, 0, 1},
		{a, 0, 3, 1},
		{NewAdam(0.9, 0.999, 0, 5), 0.5, 0, math.Inf(1)},
		// c = 0 with ε > 0: max(|a|/ε, √(b²/d)).
		{b, 0.5, 0, 0.9 * 0.5 / b.C1 / 1e-8},
		{b, -1e-30, 0, bb / math.Sqrt(d)},
		// a·a/c past float32's range squared, c ≠ 0: the ε bound too.
		{b, 1e-3, 1e-300, 0.9 * 1e-3 / b.C1 / 1e-8},
		{b, 0.5, 0.4, math.Sqrt(math.Pow(0.9*0.5/b.C1, 2)/(0.999*0.4/b.C2) + bb*bb/d)},
	} {
		if got := tc.a.Bound(tc.m0, tc.w0); math.Abs(got-tc.want) > 1e-12*tc.want && got != tc.want {
			t.Errorf("Bound(%v, %v) at %+v: %v, want %v", tc.m0, tc.w0, tc.a, got, tc.want)
		}
	}
}

// TestConstsLayout checks that consts's fields lie where
// consts_amd64.h's LOADCONSTS reads them: 8 bytes apart, in order.
func TestConstsLayout(t *testing.T) {
	var c consts
	for i, off := range []uintptr{
		unsafe.Offsetof(c.b1), unsafe.Offsetof(c.omb1), unsafe.Offsetof(c.b2), unsafe.Offsetof(c.omb2),
		unsafe.Offsetof(c.c1), unsafe.Offsetof(c.c2), unsafe.Offsetof(c.eps), unsafe.Offsetof(c.r0),
		unsafe.Offsetof(c.one), unsafe.Offsetof(c.inf), unsafe.Offsetof(c.rmax), unsafe.Offsetof(c.sr0),
	} {
		if off != uintptr(8*i) {
			t.Errorf("field %d at byte %d, LOADCONSTS reads it at %d", i, off, 8*i)
		}
	}
}

// TestBoundHoldsWithEpsilon: Adam's step |m̂|/(√v̂ + ε) from the moments
// m0, w0 and any gradient g stays within Bound(m0, w0), where the ε-free
// bound is finite and where it is not (a second moment that underflowed).
func TestBoundHoldsWithEpsilon(t *testing.T) {
	for _, st := range []int{1, 5, 100} {
		a := NewAdam(0.9, 0.999, 1e-8, st)
		for _, mw := range [][2]float64{{0.5, 0}, {-1e-12, 0}, {3e-20, 0}, {1e-3, 1e-300}, {0.2, 0.04}, {-0.7, 1e-9}} {
			m0, w0 := mw[0], mw[1]
			bnd := a.Bound(m0, w0)
			if math.IsInf(bnd, 0) || math.IsNaN(bnd) || float32(bnd) > math.MaxFloat32 {
				t.Errorf("t=%d Bound(%g, %g) = %g: want a finite float32", st, m0, w0, bnd)
			}
			worst := 0.0
			for e := -40.0; e <= 10; e += 0.05 {
				for _, g := range []float64{math.Pow(10, e), -math.Pow(10, e)} {
					m := (a.B1*m0 + (1-a.B1)*g) / a.C1
					v := (a.B2*w0 + (1-a.B2)*g*g) / a.C2
					worst = max(worst, math.Abs(m)/(math.Sqrt(v)+a.Eps))
				}
			}
			if worst > bnd*(1+1e-12) {
				t.Errorf("t=%d m0=%g w0=%g: a step of %g past Bound %g", st, m0, w0, worst, bnd)
			}
			if worst < bnd*1e-3 && w0 == 0 {
				t.Errorf("t=%d m0=%g w0=%g: Bound %g is far from the largest step found, %g", st, m0, w0, bnd, worst)
			}
		}
	}
}
