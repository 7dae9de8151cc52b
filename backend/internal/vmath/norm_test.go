package vmath

import (
	"math"
	"math/rand"
	"testing"
)

// TestNormKernelsMatch checks NormRow32's, NormGradRow32's and
// ReluGrad32's kernels against their Go loops, bit for bit (any NaN
// matching any NaN), on random values with infinities, NaN, signed zeros
// and subnormals among them, at lengths below, at and beyond one vector.
func TestNormKernelsMatch(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	const n = 1003
	g, x := make([]float32, n), make([]float32, n)
	for i := range g {
		g[i], x[i] = float32(r.NormFloat64()*10), float32(r.NormFloat64())
	}
	neg0 := float32(math.Copysign(0, -1))
	g[5], g[9], g[40], x[41], g[77], x[78] = float32(math.Inf(1)), float32(math.NaN()), neg0, float32(math.Inf(-1)), 1e-45, neg0
	x[3], x[5], x[9], x[12], x[13], g[12] = 0, -1, 2, float32(math.NaN()), 1e-45, float32(math.Inf(-1))
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	check := func(t *testing.T, what string, m int, got, want []float32) {
		t.Helper()
		for i := range want {
			if !same(got[i], want[i]) {
				t.Fatalf("%s m=%d [%d]: %v, Go loop %v", what, m, i, got[i], want[i])
			}
		}
	}
	for _, k := range kernels()[1:] {
		t.Run(k.String(), func(t *testing.T) {
			for _, m := range []int{n, 7, 8, 9, 15, 16, 17, 64} {
				want, got := make([]float32, m), make([]float32, m)
				normRowWith(scalar, want, x, 0.3, 1.7, -1.3, 0.25)
				normRowWith(k, got, x, 0.3, 1.7, -1.3, 0.25)
				check(t, "NormRow32", m, got, want)
				normGradRowWith(scalar, want, x, g, 0.3, 1.7, -0.2, 0.7, 1.9)
				normGradRowWith(k, got, x, g, 0.3, 1.7, -0.2, 0.7, 1.9)
				check(t, "NormGradRow32", m, got, want)
				reluGradWith(scalar, want, x, g)
				reluGradWith(k, got, x, g)
				check(t, "ReluGrad32", m, got, want)
			}
		})
	}
}
