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
		{b, 0.5, 0, math.Inf(1)},
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
		unsafe.Offsetof(c.one), unsafe.Offsetof(c.inf),
	} {
		if off != uintptr(8*i) {
			t.Errorf("field %d at byte %d, LOADCONSTS reads it at %d", i, off, 8*i)
		}
	}
}
