package stepvec

import (
	"math/rand/v2"
	"testing"
)

// TestProposeKernel checks Propose's AVX-512 kernel against its Go loop,
// bit for bit (any NaN for any NaN), with and without moments and a
// pending step, at every length up to 67 and longer ones, from unaligned
// starts, on random values with ±0, subnormals, ±Inf, NaN and huge and
// tiny values among them (zero first moments: √r0; a nonzero first moment
// with a zero second: +Inf).
func TestProposeKernel(t *testing.T) {
	needVector(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name          string
		moments, pend bool
	}{
		{"no moments", false, false},
		{"moments", true, false},
		{"pending", true, true},
		{"pending, no moments", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, a := range adams {
				for _, n := range lengths {
					off := rng.IntN(4)
					v := randVec(rng, n+off, 1)[off:]
					var m, w, pend []float32
					if tc.moments {
						m, w = moments(rng, n+off)
						m, w = m[off:], w[off:]
					}
					if tc.pend {
						pend = randVec(rng, n+off, 1)[off:]
					}
					var got, want [3][]float32
					for k := range 3 {
						got[k], want[k] = make([]float32, n+off)[off:], make([]float32, n)
					}
					a.propose(true, got[0], got[1], got[2], v, m, w, pend)
					a.propose(false, want[0], want[1], want[2], v, m, w, pend)
					for k, name := range []string{"prop", "metric", "bound"} {
						for i := range n {
							if !same(got[k][i], want[k][i]) {
								t.Fatalf("%+v n=%d %s[%d] (v %v m %v w %v): kernel %v, Go loop %v",
									a, n, name, i, v[i], at(m, i), at(w, i), got[k][i], want[k][i])
							}
						}
					}
				}
			}
		})
	}
}

// at is x[i], 0 for a nil x.
func at(x []float32, i int) float32 {
	if x == nil {
		return 0
	}
	return x[i]
}

// BenchmarkPropose times Propose's Go loop and kernel on one goroutine
// over 1M weights with moments and without a pending step, in ns and CPU
// ns per weight.
func BenchmarkPropose(b *testing.B) {
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(1, 1))
	v := randVec(rng, n, 1)
	m, w := moments(rng, n)
	prop, metric, bnd := make([]float32, n), make([]float32, n), make([]float32, n)
	a := NewAdam(0.9, 0.999, 1e-8, 5)
	for _, vec := range kernelFlags() {
		b.Run(kernelName(vec), func(b *testing.B) {
			perWeight(b, n, func() { a.propose(vec, prop, metric, bnd, v, m, w, nil) })
		})
	}
}
