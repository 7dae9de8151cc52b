package stepvec

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMomentumKernels checks Momentum's Propose, Update and Advance
// kernels against their Go loops, bit for bit (any NaN for any NaN), and
// Update's report of finiteness against what it wrote: with and without
// a buffer and a pending step, in place, at every length up to 67 and
// longer ones, from unaligned starts, on random values with ±0,
// subnormals, ±Inf, NaN and huge values among them.
func TestMomentumKernels(t *testing.T) {
	needVector(t)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		name         string
		buffer, pend bool
	}{
		{"no buffer", false, false},
		{"buffer", true, false},
		{"pending", true, true},
		{"pending, no buffer", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mu := range []Momentum{0.9, 0.5} {
				for _, n := range lengths {
					off := rng.IntN(4)
					v, base := randVec(rng, n+off, 1)[off:], randVec(rng, n+off, 1)[off:]
					var m, pend []float32
					if tc.buffer {
						m = randVec(rng, n+off, 1)[off:]
					}
					if tc.pend {
						pend = randVec(rng, n+off, 1)[off:]
					}
					got, want := make([]float32, n+off)[off:], make([]float32, n)
					mu.propose(true, got, v, m, pend)
					mu.propose(false, want, v, m, pend)
					for i := range n {
						if !same(got[i], want[i]) {
							t.Fatalf("μ=%v n=%d Propose[%d] (v %v b %v p %v): kernel %v, Go loop %v",
								mu, n, i, v[i], at(m, i), at(pend, i), got[i], want[i])
						}
					}
					for _, lr := range []float64{1e-3, 1e38} {
						got = slices.Clone(base) // in place
						okGot := mu.update(true, got, got, v, m, lr)
						okWant := mu.update(false, want, base, v, m, lr)
						for i := range n {
							if !same(got[i], want[i]) {
								t.Fatalf("μ=%v lr=%g n=%d Update[%d] (base %v v %v b %v): kernel %v, Go loop %v",
									mu, lr, n, i, base[i], v[i], at(m, i), got[i], want[i])
							}
						}
						if okGot != okWant || okWant != finiteGo(want) {
							t.Fatalf("μ=%v lr=%g n=%d: Update's kernel reports finite %v, Go loop %v, the values written %v",
								mu, lr, n, okGot, okWant, finiteGo(want))
						}
					}
					if m != nil {
						gotM, wantM := slices.Clone(m), slices.Clone(m)
						mu.advance(true, gotM, v)
						mu.advance(false, wantM, v)
						for i := range n {
							if !same(gotM[i], wantM[i]) {
								t.Fatalf("μ=%v n=%d Advance[%d] (v %v b %v): kernel %v, Go loop %v",
									mu, n, i, v[i], m[i], gotM[i], wantM[i])
							}
						}
					}
				}
			}
		})
	}
}

// BenchmarkMomentum times Momentum's Propose (with a buffer), Update and
// Advance on one goroutine over 1M weights, in ns and CPU ns per weight.
func BenchmarkMomentum(b *testing.B) {
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(1, 1))
	v, base, m := randVec(rng, n, 1), randVec(rng, n, 1), randVec(rng, n, 1)
	dst := make([]float32, n)
	mu := Momentum(0.9)
	for _, vec := range kernelFlags() {
		for _, pass := range []struct {
			name string
			f    func()
		}{
			{"propose", func() { mu.propose(vec, dst, v, m, nil) }},
			{"update", func() { mu.update(vec, dst, base, v, m, 1e-3) }},
			{"advance", func() { mu.advance(vec, m, v) }},
		} {
			b.Run(pass.name+"/"+kernelName(vec), func(b *testing.B) {
				perWeight(b, n, pass.f)
			})
		}
	}
}
