package png

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// vecLengths are the column counts the kernel tests run: every length up
// to 67 (the kernels' tails and their first full steps) and a few large.
func vecLengths() []int {
	ns := make([]int, 0, 72)
	for n := 0; n <= 67; n++ {
		ns = append(ns, n)
	}
	return append(ns, 1000, 4099, 65543)
}

// withVec runs f with the vector kernels on (when the CPU has them) or
// off, restoring the setting after.
func withVec(on bool, f func()) {
	saved := useVec
	useVec = on && saved
	defer func() { useVec = saved }()
	f()
}

// vecData returns n values for a kernel test: Gaussian times scale, and
// where special is set, some of them replaced by ±0, float32 subnormals,
// and huge and tiny values.
func vecData(rng *rand.Rand, n int, scale float64, special bool) []float32 {
	x := make([]float32, n)
	sp := []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -3e-40, 1e30, -1e30, 1e-30}
	for k := range x {
		x[k] = float32(scale * rng.NormFloat64())
		if special && rng.IntN(5) == 0 {
			x[k] = sp[rng.IntN(len(sp))]
		}
	}
	return x
}

// positive returns n values > 0 over decades decades around 1 (where
// special, some of them subnormal, huge or +Inf when inf).
func positive(rng *rand.Rand, n int, decades float64, special, inf bool) []float32 {
	x := make([]float32, n)
	for k := range x {
		x[k] = float32(math.Pow(10, decades*(rng.Float64()-0.5)))
		if special && rng.IntN(6) == 0 {
			sp := []float32{math.SmallestNonzeroFloat32, 1e-38, 3e38, 1}
			if inf {
				sp = append(sp, float32(math.Inf(1)))
			}
			x[k] = sp[rng.IntN(len(sp))]
		}
	}
	return x
}

// sameOrClose reports whether got matches want: the same bits, or within
// tol of scale where both are finite (a sum taken in another order).
func sameOrClose(got, want, scale, tol float64) bool {
	if math.Float64bits(got) == math.Float64bits(want) {
		return true
	}
	if math.IsNaN(got) || math.IsNaN(want) || math.IsInf(got, 0) || math.IsInf(want, 0) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	return math.Abs(got-want) <= tol*scale
}

// TestMetricGramRanges: the Gram pass's m = 2 and m = 3 loops give the
// general loop's bits in Go, and the m = 2 kernel its sums to rounding
// (relative to the sum of the terms' magnitudes), on random data with
// special values, every length to 67 and a few large, from unaligned
// starts.
func TestMetricGramRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 1))
	for _, m := range []int{2, 3} {
		for _, special := range []bool{false, true} {
			for _, n := range vecLengths() {
				off := rng.IntN(4)
				N := n + off + rng.IntN(3)
				J := NewJacobian(m, N)
				copy(J.Data, vecData(rng, m*N, 1, special))
				P := positive(rng, N, 8, special, false)
				prop := vecData(rng, N, 1, special)
				per := m*m + m
				want := make([]float64, per)
				metricGramRangeM(want, J, P, prop, off, off+n)
				// The magnitudes' sums bound each sum's rounding.
				absJ := J
				absJ.Data = make([]float32, len(J.Data))
				for k, v := range J.Data {
					absJ.Data[k] = float32(math.Abs(float64(v)))
				}
				absX := make([]float32, N)
				for k, v := range prop {
					absX[k] = float32(math.Abs(float64(v)))
				}
				scale := make([]float64, per)
				metricGramRangeM(scale, absJ, P, absX, off, off+n)
				name := fmt.Sprintf("m=%d/special=%v/n=%d", m, special, n)
				got := make([]float64, per)
				withVec(false, func() {
					if m == 2 {
						metricGramRange2(got, J, P, prop, off, off+n)
					} else {
						metricGramRange3(got, J, P, prop, off, off+n)
					}
				})
				for k := range got {
					if math.Float64bits(got[k]) != math.Float64bits(want[k]) {
						t.Errorf("%s: Go loop part[%d] = %v, general loop %v", name, k, got[k], want[k])
					}
				}
				if m != 2 {
					continue
				}
				clear(got)
				withVec(true, func() { metricGramRange2(got, J, P, prop, off, off+n) })
				for k := range got {
					if !sameOrClose(got[k], want[k], scale[k], 1e-14) {
						t.Errorf("%s: kernel part[%d] = %v, Go loop %v (terms' magnitudes %v)", name, k, got[k], want[k], scale[k])
					}
				}
			}
		}
	}
}

// TestMetricGramKernelExact: on values whose products and sums are exact
// in float64 (small integers times powers of two) the m = 2 kernel's sums
// are the Go loop's bits, whatever their order.
func TestMetricGramKernelExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(72, 1))
	for _, n := range vecLengths() {
		J := NewJacobian(2, n)
		for k := range J.Data {
			J.Data[k] = float32(rng.IntN(64)-32) / 8
		}
		P, prop := make([]float32, n), make([]float32, n)
		for k := range P {
			P[k] = float32(rng.IntN(16)+1) * 4
			prop[k] = float32(rng.IntN(64) - 32)
		}
		var want, got [6]float64
		metricGramRangeM(want[:], J, P, prop, 0, n)
		withVec(true, func() { metricGramRange2(got[:], J, P, prop, 0, n) })
		if got != want {
			t.Errorf("n=%d: kernel %v, Go loop %v", n, got, want)
		}
	}
}

// TestMetricGramNonFinite: an Inf or NaN in J makes the sums it enters
// non-finite on both paths, so that Constrain's check on K still names it.
func TestMetricGramNonFinite(t *testing.T) {
	for _, bad := range []float32{float32(math.Inf(1)), float32(math.NaN())} {
		for _, at := range []int{0, 7, 8, 30} {
			n := 33
			J := NewJacobian(2, n)
			for k := range J.Data {
				J.Data[k] = 1
			}
			J.Data[at] = bad
			P, prop := make([]float32, n), make([]float32, n)
			for k := range P {
				P[k], prop[k] = 1, 1
			}
			var want, got [6]float64
			withVec(false, func() { metricGramRange2(want[:], J, P, prop, 0, n) })
			withVec(true, func() { metricGramRange2(got[:], J, P, prop, 0, n) })
			for k := range got {
				if !sameOrClose(got[k], want[k], 0, 0) {
					t.Errorf("J[%d] = %v: kernel part[%d] = %v, Go loop %v", at, bad, k, got[k], want[k])
				}
			}
		}
	}
}

// TestVecKernelsRun: on a CPU with AVX-512 the kernel tests above compare
// the kernels, not the Go loops with themselves.
func TestVecKernelsRun(t *testing.T) {
	t.Logf("AVX-512 kernels: %v", useVec)
}
