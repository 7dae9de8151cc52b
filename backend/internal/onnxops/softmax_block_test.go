package onnxops

import (
	"math"
	"math/rand"
	"testing"
)

// softmaxNaive is the one-vector (Log)Softmax formula softmaxForward
// follows: the maximum by math.Max, the sum of math.Exp over k in order.
func softmaxNaive(dst, src []float32, outer, d, inner int, logSm bool) {
	for it := 0; it < outer*inner; it++ {
		base := (it/inner)*d*inner + it%inner
		mx := math.Inf(-1)
		for k := 0; k < d; k++ {
			mx = math.Max(mx, float64(src[base+k*inner]))
		}
		s := 0.0
		for k := 0; k < d; k++ {
			s += math.Exp(float64(src[base+k*inner]) - mx)
		}
		ls := math.Log(s)
		for k := 0; k < d; k++ {
			z := float64(src[base+k*inner]) - mx - ls
			if logSm {
				dst[base+k*inner] = float32(z)
			} else {
				dst[base+k*inner] = float32(math.Exp(z))
			}
		}
	}
}

// softmaxBackwardNaive is the one-vector gradient softmaxBackward follows.
func softmaxBackwardNaive(dst, y, g []float32, outer, d, inner int, logSm bool) {
	for it := 0; it < outer*inner; it++ {
		base := (it/inner)*d*inner + it%inner
		s := 0.0
		for k := 0; k < d; k++ {
			i := base + k*inner
			if logSm {
				s += float64(g[i])
			} else {
				s += float64(g[i]) * float64(y[i])
			}
		}
		for k := 0; k < d; k++ {
			i := base + k*inner
			if logSm {
				dst[i] = float32(float64(g[i]) - math.Exp(float64(y[i]))*s)
			} else {
				dst[i] = float32(float64(y[i]) * (float64(g[i]) - s))
			}
		}
	}
}

// TestSoftmaxBlocksMatchNaive checks the blocked (Log)Softmax kernels
// against the one-vector formula bit for bit, with inner 1 (the row
// kernels, d below and above softmaxBlock), inner below, at and
// above softmaxBlock (not a multiple of it), several outer indices, and
// NaN, infinite and huge inputs among the values (a NaN matches any NaN:
// which operand's NaN an operation passes on is the compiler's choice).
func TestSoftmaxBlocksMatchNaive(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for _, c := range []struct{ outer, d, inner int }{
		{7, 10, 1}, {48, 64, 1}, {3, 2*softmaxBlock + 37, 1}, {3, 13, 100}, {2, 5, softmaxBlock}, {3, 13, 2*softmaxBlock + 37}, {1, 1, 600},
	} {
		n := c.outer * c.d * c.inner
		x, g := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], g[i] = float32(4*r.NormFloat64()), float32(r.NormFloat64())
		}
		if n > 40 {
			x[3], x[17], x[29] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
			x[n-1], g[n-2] = 3e38, float32(math.NaN())
		}
		for _, logSm := range []bool{false, true} {
			got, want := make([]float32, n), make([]float32, n)
			softmaxForward(got, x, c.outer, c.d, c.inner, logSm)
			softmaxNaive(want, x, c.outer, c.d, c.inner, logSm)
			dGot, dWant := make([]float32, n), make([]float32, n)
			softmaxBackward(dGot, want, g, c.outer, c.d, c.inner, logSm)
			softmaxBackwardNaive(dWant, want, g, c.outer, c.d, c.inner, logSm)
			same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
			for i := range want {
				if !same(got[i], want[i]) {
					t.Fatalf("%+v log=%v: y[%d] = %v, one-vector formula %v", c, logSm, i, got[i], want[i])
				}
				if !same(dGot[i], dWant[i]) {
					t.Fatalf("%+v log=%v: dx[%d] = %v [%#x], one-vector formula %v [%#x]", c, logSm, i, dGot[i], math.Float32bits(dGot[i]), dWant[i], math.Float32bits(dWant[i]))
				}
			}
		}
	}
}
