package stepvec

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/paretonav/paretonav/internal/cpu"
)

// needVector skips a test of the kernels against the Go loops on a CPU
// without AVX-512F, where only the Go loops run.
func needVector(t testing.TB) {
	t.Helper()
	if !cpu.AVX512 {
		t.Skip("no AVX-512F: only the Go loops run here")
	}
}

// specials are the values the kernels must treat as the Go loops do.
var specials = []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-40, -3e-39, 1e-30,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3e38, -3e38, 1, -1, 1e20, 1e-20}

// randVec returns n values: normally distributed at scale, with one in
// four a special value.
func randVec(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		if rng.IntN(4) == 0 {
			x[i] = specials[rng.IntN(len(specials))]
		} else {
			x[i] = float32(rng.NormFloat64() * scale)
		}
	}
	return x
}

// moments returns n first and second moments: mostly as Adam makes them
// (w ≥ m²·0.01), with special values, zero first moments and zero second
// moments beside nonzero first ones among them.
func moments(rng *rand.Rand, n int) (m, w []float32) {
	m, w = randVec(rng, n, 0.1), randVec(rng, n, 0.01)
	for i := range w {
		switch rng.IntN(8) {
		case 0:
			m[i] = 0
		case 1:
			w[i] = 0
		case 2:
		default:
			w[i] = w[i]*w[i] + m[i]*m[i]*0.01
		}
	}
	return m, w
}

// same reports whether x and y have the same bits, or are both NaN.
func same(x, y float32) bool {
	return math.Float32bits(x) == math.Float32bits(y) || x != x && y != y
}

// lengths are the vector lengths the tests run: every length up to 67
// and a few long ones.
var lengths = func() []int {
	var ns []int
	for n := range 68 {
		ns = append(ns, n)
	}
	return append(ns, 1000, 4099)
}()

// adams are Adam steps the tests run: the first, early and late ones,
// with and without ε.
var adams = []Adam{
	NewAdam(0.9, 0.999, 1e-8, 1),
	NewAdam(0.9, 0.999, 1e-8, 2),
	NewAdam(0.9, 0.999, 0, 7),
	NewAdam(0.5, 0.9, 1e-3, 1000),
}

// kernelFlags lists the paths this CPU runs: the Go loop, then the
// kernels when it has AVX-512F.
func kernelFlags() []bool {
	if cpu.AVX512 {
		return []bool{false, true}
	}
	return []bool{false}
}

// kernelName names a path for subtests and benchmarks.
func kernelName(vec bool) string {
	if vec {
		return "avx512"
	}
	return "go"
}

// perWeight runs f b.N times and reports its wall time and its thread's
// CPU time per weight of a pass over n weights (the CPU time, not the
// wall time, is what to compare on a machine shared with other work).
func perWeight(b *testing.B, n int, f func()) {
	runtime.LockOSThread() // cpuNanos counts this thread
	defer runtime.UnlockOSThread()
	runtime.GC() // the set-up's garbage, not collected during the pass
	b.ResetTimer()
	cpu := cpuNanos()
	for range b.N {
		f()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/weight")
	b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N)/float64(n), "cpu-ns/weight")
}
