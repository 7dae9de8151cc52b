package vmath

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestAffineRelu32 checks every kernel this CPU runs against the scalar
// loop, bit for bit (any NaN for a NaN), with and without the Relu, on
// x sweeping every 4099th float32 bit pattern (both signs, subnormals,
// ±Inf and NaNs) and random values, for coefficients giving products and
// sums that are ±0, subnormal, overflowing or NaN, and lengths with and
// without a tail.
func TestAffineRelu32(t *testing.T) {
	var x []float32
	for b := uint64(0); b < 1<<32; b += 4099 {
		x = append(x, math.Float32frombits(uint32(b)))
	}
	r := rand.New(rand.NewSource(1))
	for range 1 << 16 {
		x = append(x, float32(r.NormFloat64()))
	}
	x = append(x, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
	negZero := float32(math.Copysign(0, -1))
	coefs := [][2]float32{{1, 0}, {1.5, -0.25}, {-0.75, 3}, {0, 0}, {0, negZero}, {negZero, negZero}, {-1, negZero},
		{3e38, 1}, {1e-30, 1e-40}, {float32(math.Inf(1)), 0}, {float32(math.NaN()), 1}, {2, float32(math.Inf(-1))}}
	for _, k := range kernels() {
		for _, c := range coefs {
			for _, relu := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/a=%v,b=%v/relu=%v", k, c[0], c[1], relu), func(t *testing.T) {
					for _, n := range []int{len(x), len(x) - 7, 15, 16, 33} {
						got := make([]float32, n)
						want := make([]float32, n)
						affineReluWith(k, got, x, c[0], c[1], relu)
						affineReluGo(want, x, c[0], c[1], relu)
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
								t.Fatalf("n %d: x = %v [%#08x]: %v [%#08x], scalar %v [%#08x]", n, x[i], math.Float32bits(x[i]),
									got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
							}
						}
					}
				})
			}
		}
	}
}

// BenchmarkAffineRelu32 times AffineRelu32 with the Relu on 1 M values
// per kernel.
func BenchmarkAffineRelu32(b *testing.B) {
	x := make([]float32, 1<<20)
	r := rand.New(rand.NewSource(1))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	dst := make([]float32, len(x))
	for _, k := range kernels() {
		b.Run(k.String(), func(b *testing.B) {
			for b.Loop() {
				affineReluWith(k, dst, x, 1.5, -0.25, true)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/value")
		})
	}
}
