package stepvec

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// exactSum returns the sum of terms rounded once to float64, and the sum
// of their magnitudes.
func exactSum(terms []float64) (sum, abs float64) {
	s := new(big.Float).SetPrec(2200)
	for _, t := range terms {
		s.Add(s, new(big.Float).SetPrec(2200).SetFloat64(t))
		abs += math.Abs(t)
	}
	sum, _ = s.Float64()
	return sum, abs
}

// closeSum reports whether got, a sum of n terms, is within the rounding
// of a sum in 8 lanes of the exact sum, or, for non-finite terms, the
// same infinity or NaN as the Go loop's sum want.
func closeSum(got, want float64, terms []float64) bool {
	if math.IsNaN(want) || math.IsInf(want, 0) {
		return got == want || got != got && want != want
	}
	exact, abs := exactSum(terms)
	return math.Abs(got-exact) <= float64(len(terms)/lanes+lanes+1)*0x1p-53*abs
}

// finiteVec returns n finite values at scales from 1e-30 to 1e30 (each
// value's scale drawn at random), with ±0 and subnormals among them.
func finiteVec(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch rng.IntN(8) {
		case 0:
			x[i] = specials[rng.IntN(7)] // ±0, subnormals, 1e-30
		default:
			x[i] = float32(rng.NormFloat64() * math.Pow(10, 60*rng.Float64()-30))
		}
	}
	return x
}

// TestSumKernels checks ScaleSums's and DeltaDot's kernels against the
// exact sums of the Go loops' terms (within the rounding of a sum in 8
// lanes) at every length up to 67 and longer ones, from unaligned starts,
// on finite values of every scale, and on values with ±Inf and NaN among
// them (the Go loop's infinity or NaN); with and without a metric.
func TestSumKernels(t *testing.T) {
	needVector(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name     string
		specials bool
	}{{"finite", false}, {"specials", true}} {
		t.Run(tc.name, func(t *testing.T) {
			vec := func(n int) []float32 {
				if tc.specials {
					return randVec(rng, n, 1)
				}
				return finiteVec(rng, n)
			}
			for _, n := range lengths {
				off := rng.IntN(4)
				a, b, c := vec(n + off)[off:], vec(n + off)[off:], vec(n + off)[off:]
				for _, metric := range [][]float32{nil, c} {
					num, den := scaleSums(true, a, metric, b)
					wantNum, wantDen := scaleSums(false, a, metric, b)
					tn, td := make([]float64, n), make([]float64, n)
					for i := range n {
						p, x := 1.0, float64(b[i])
						if metric != nil {
							p = float64(metric[i])
						}
						tn[i], td[i] = float64(a[i])*float64(a[i])/p, p*x*x
					}
					if !closeSum(num, wantNum, tn) || !closeSum(den, wantDen, td) {
						t.Fatalf("ScaleSums n=%d metric %v: kernel (%v, %v), Go loop (%v, %v)",
							n, metric != nil, num, den, wantNum, wantDen)
					}
				}
				got, want := deltaDot(true, a, b, c), deltaDot(false, a, b, c)
				terms := make([]float64, n)
				for i := range n {
					terms[i] = float64(a[i]) * (float64(c[i]) - float64(b[i]))
				}
				if !closeSum(got, want, terms) {
					t.Fatalf("DeltaDot n=%d: kernel %v, Go loop %v", n, got, want)
				}
			}
		})
	}
}

// BenchmarkSums times ScaleSums (with a metric) and DeltaDot on one
// goroutine over 1M weights, in ns and CPU ns per weight.
func BenchmarkSums(b *testing.B) {
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(1, 1))
	x, y, z := randVec(rng, n, 1), randVec(rng, n, 1), randVec(rng, n, 1)
	for _, vec := range kernelFlags() {
		b.Run("scale/"+kernelName(vec), func(b *testing.B) {
			perWeight(b, n, func() { scaleSums(vec, x, y, z) })
		})
		b.Run("delta/"+kernelName(vec), func(b *testing.B) {
			perWeight(b, n, func() { deltaDot(vec, x, y, z) })
		})
	}
}
