package stepvec

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestUpdateKernels checks Update's and Adam.Update's kernels against
// their Go loops, bit for bit (any NaN for any NaN), and their reports of
// finiteness against Finite's Go loop on what they wrote: with and
// without moments, at every length up to 67 and longer ones, from
// unaligned starts, on random values with ±0, subnormals, ±Inf, NaN and
// huge values among them (an update overflowing float32 is not finite),
// and in place (dst = base).
func TestUpdateKernels(t *testing.T) {
	needVector(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name     string
		adam     bool
		moments  bool
		inPlace  bool
		specials bool
	}{
		{"update", false, false, false, true},
		{"update, finite", false, false, false, false},
		{"update in place", false, false, true, true},
		{"adam, no moments", true, false, false, true},
		{"adam", true, true, false, true},
		{"adam, finite", true, true, false, false},
		{"adam in place", true, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vec := func(n int, scale float64) []float32 {
				if tc.specials {
					return randVec(rng, n, scale)
				}
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64() * scale)
				}
				return x
			}
			for _, a := range adams {
				for _, lr := range []float64{1e-3, 1e38} {
					for _, n := range lengths {
						off := rng.IntN(4)
						base, v := vec(n+off, 1)[off:], vec(n+off, 1)[off:]
						var m, w []float32
						if tc.moments {
							m, w = moments(rng, n+off)
							m, w = m[off:], w[off:]
						}
						got, want := make([]float32, n+off)[off:], make([]float32, n)
						if tc.inPlace {
							got = slices.Clone(base)
						}
						var okGot, okWant bool
						if tc.adam {
							okGot = a.update(true, got, got0(tc.inPlace, got, base), v, m, w, lr)
							okWant = a.update(false, want, base, v, m, w, lr)
						} else {
							okGot = update(true, got, got0(tc.inPlace, got, base), v, lr)
							okWant = update(false, want, base, v, lr)
						}
						for i := range n {
							if !same(got[i], want[i]) {
								t.Fatalf("%+v lr=%g n=%d [%d] (base %v v %v m %v w %v): kernel %v, Go loop %v",
									a, lr, n, i, base[i], v[i], at(m, i), at(w, i), got[i], want[i])
							}
						}
						if okGot != okWant || okWant != finiteGo(want) {
							t.Fatalf("%+v lr=%g n=%d: kernel reports finite %v, Go loop %v, the values written %v",
								a, lr, n, okGot, okWant, finiteGo(want))
						}
					}
				}
				if !tc.adam {
					break // Update has no Adam constants
				}
			}
		})
	}
}

// got0 is the base the kernel runs from: dst itself in place.
func got0(inPlace bool, dst, base []float32) []float32 {
	if inPlace {
		return dst
	}
	return base
}

// TestFinite checks Finite (kernel and Go loop) at every length up to 67
// and longer ones, with no non-finite value and with one ±Inf or NaN at
// each position in turn.
func TestFinite(t *testing.T) {
	for _, vec := range kernelFlags() {
		t.Run(kernelName(vec), func(t *testing.T) {
			for _, n := range append(lengths, 300) {
				x := make([]float32, n+1)[1:]
				for i := range x {
					x[i] = float32(i) - 3e38*float32(i%2)
				}
				if !finite(vec, x) {
					t.Fatalf("n=%d: finite values reported not finite", n)
				}
				for i := range n {
					for _, bad := range specials[7:10] {
						keep := x[i]
						x[i] = bad
						if finite(vec, x) {
							t.Fatalf("n=%d: %v at %d reported finite", n, bad, i)
						}
						x[i] = keep
					}
				}
			}
		})
	}
}

// BenchmarkUpdate times Update and Adam.Update (with moments) on one
// goroutine over 1M weights, in ns and CPU ns per weight.
func BenchmarkUpdate(b *testing.B) {
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(1, 1))
	base, v, u := randVec(rng, n, 1), randVec(rng, n, 1), randVec(rng, n, 1)
	m, w := moments(rng, n)
	dst := make([]float32, n)
	a := NewAdam(0.9, 0.999, 1e-8, 5)
	for _, vec := range kernelFlags() {
		b.Run("update/"+kernelName(vec), func(b *testing.B) {
			perWeight(b, n, func() { update(vec, dst, base, u, 1e-3) })
		})
		b.Run("adam/"+kernelName(vec), func(b *testing.B) {
			perWeight(b, n, func() { a.update(vec, dst, base, v, m, w, 1e-3) })
		})
	}
}

// BenchmarkFinite times Finite on one goroutine over 1M finite values,
// in ns and CPU ns per value.
func BenchmarkFinite(b *testing.B) {
	const n = 1 << 20
	x := make([]float32, n)
	for _, vec := range kernelFlags() {
		b.Run(kernelName(vec), func(b *testing.B) {
			perWeight(b, n, func() { finite(vec, x) })
		})
	}
}
