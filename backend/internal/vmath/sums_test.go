package vmath

import (
	"math"
	"math/rand"
	"testing"
)

// TestAddTo64KernelsMatch checks AddTo64's and AddNormTo64's kernels
// against their Go loops, bit for bit (any NaN matching any NaN), on
// random values with infinities, NaN, signed zeros and subnormals among
// them, at lengths below, at and beyond one vector.
func TestAddTo64KernelsMatch(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	const n = 1003
	g, x, acc0 := make([]float32, n), make([]float32, n), make([]float64, n)
	for i := range g {
		g[i], x[i], acc0[i] = float32(r.NormFloat64()*10), float32(r.NormFloat64()), r.NormFloat64()*1e3
	}
	g[5], g[9], g[40], x[41], g[77], acc0[78] = float32(math.Inf(1)), float32(math.NaN()), float32(math.Copysign(0, -1)),
		float32(math.Inf(-1)), 1e-45, math.Copysign(0, -1)
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b }
	for _, k := range kernels()[1:] {
		t.Run(k.String(), func(t *testing.T) {
			for _, m := range []int{n, 7, 8, 9, 64} {
				want, got := append([]float64(nil), acc0[:m]...), append([]float64(nil), acc0[:m]...)
				addToWith(scalar, want, g)
				addToWith(k, got, g)
				for i := range want {
					if !same(got[i], want[i]) {
						t.Fatalf("AddTo64 m=%d [%d]: %v, Go loop %v", m, i, got[i], want[i])
					}
				}
				want, got = append(want[:0], acc0[:m]...), append(got[:0], acc0[:m]...)
				addNormToWith(scalar, want, g, x, 0.3, 1.7)
				addNormToWith(k, got, g, x, 0.3, 1.7)
				for i := range want {
					if !same(got[i], want[i]) {
						t.Fatalf("AddNormTo64 m=%d [%d]: %v, Go loop %v", m, i, got[i], want[i])
					}
				}
			}
		})
	}
}
