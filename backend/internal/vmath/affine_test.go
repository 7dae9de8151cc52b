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

// TestBNReluGradRow32 checks every kernel against the scalar loop, bit
// for bit (any NaN for a NaN), on rows of every length from 0 to 41 with
// and without d, on values giving ±0, NaN and ±Inf (in x, gy and the
// coefficients) and on random rows, where a change in the order of the
// sums would show.
func TestBNReluGradRow32(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40}
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b) }
	coefs := [][4]float32{{1.5, -0.25, 0, 0.1}, {-0.75, 0.5, 0, -2}, {1, 0, float32(math.Copysign(0, -1)), 0}, {2, float32(math.NaN()), 0, 0}, {1e30, 1e30, 0, 1}}
	for _, k := range kernels() {
		for trial := 0; trial < 200; trial++ {
			n := trial % 42
			x, gy := make([]float32, n), make([]float32, n)
			for i := range x {
				x[i], gy[i] = float32(r.NormFloat64()), float32(r.NormFloat64()*1e3)
				if trial%3 == 0 && r.Intn(8) == 0 {
					x[i] = specials[r.Intn(len(specials))]
				}
				if trial%5 == 0 && r.Intn(8) == 0 {
					gy[i] = specials[r.Intn(len(specials))]
				}
			}
			c := coefs[trial%len(coefs)]
			for _, withD := range []bool{false, true} {
				var d, dw []float32
				if withD {
					d, dw = make([]float32, n), make([]float32, n)
				}
				sx, sg := bnReluGradRowWith(k, x, gy, d, c[0], c[1], c[2], c[3])
				wx, wg := bnReluGradRowGo(x, gy, dw, c[0], c[1], c[2], c[3])
				if !same(sx, wx) || !same(sg, wg) {
					t.Fatalf("%v trial %d n %d: sums %v, %v; scalar %v, %v", k, trial, n, sx, sg, wx, wg)
				}
				for i := range d {
					if !same(d[i], dw[i]) {
						t.Fatalf("%v trial %d: d[%d] = %v, scalar %v", k, trial, i, d[i], dw[i])
					}
				}
			}
		}
	}
}

// BenchmarkBNReluGradRow32 times one 1 M-value row per kernel.
func BenchmarkBNReluGradRow32(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	x, gy, d := make([]float32, 1<<20), make([]float32, 1<<20), make([]float32, 1<<20)
	for i := range x {
		x[i], gy[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	for _, k := range kernels() {
		b.Run(k.String(), func(b *testing.B) {
			for b.Loop() {
				bnReluGradRowWith(k, x, gy, d, 1.5, -0.25, 0, 0.1)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/value")
		})
	}
}
