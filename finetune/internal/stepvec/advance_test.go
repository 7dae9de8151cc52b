package stepvec

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAdvanceKernel checks Advance's kernel against its Go loop, bit for
// bit (any NaN for any NaN), at every length up to 67 and longer ones,
// from unaligned starts, on random values with ±0, subnormals, ±Inf, NaN
// and huge values among them.
func TestAdvanceKernel(t *testing.T) {
	needVector(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, a := range adams {
		for _, n := range lengths {
			off := rng.IntN(4)
			v := randVec(rng, n+off, 1)[off:]
			m, w := moments(rng, n+off)
			m, w = m[off:], w[off:]
			wantM, wantW := slices.Clone(m), slices.Clone(w)
			a.advance(true, m, w, v)
			a.advance(false, wantM, wantW, v)
			for i := range n {
				if !same(m[i], wantM[i]) || !same(w[i], wantW[i]) {
					t.Fatalf("%+v n=%d [%d] (v %v): kernel m %v w %v, Go loop m %v w %v",
						a, n, i, v[i], m[i], w[i], wantM[i], wantW[i])
				}
			}
		}
	}
}

// BenchmarkAdvance times Advance on one goroutine over 1M weights, in ns
// and CPU ns per weight.
func BenchmarkAdvance(b *testing.B) {
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(1, 1))
	v := randVec(rng, n, 1)
	m, w := moments(rng, n)
	a := NewAdam(0.9, 0.999, 1e-8, 5)
	for _, vec := range kernelFlags() {
		b.Run(kernelName(vec), func(b *testing.B) {
			perWeight(b, n, func() { a.advance(vec, m, w, v) })
		})
	}
}
