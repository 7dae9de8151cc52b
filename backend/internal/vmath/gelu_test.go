package vmath

import (
	"math"
	"testing"
)

// geluScalar is Gelu32's definition: float32(v·Φ(v)) with Φ from Phi64,
// v = float64(x[i]).
func geluScalar(x []float32) []float32 {
	v, phi := make([]float64, len(x)), make([]float64, len(x))
	for i, f := range x {
		v[i] = float64(f)
	}
	Phi64(phi, v)
	y := make([]float32, len(x))
	for i := range y {
		y[i] = float32(v[i] * phi[i])
	}
	return y
}

// TestGelu32KernelsMatch checks every Gelu32 kernel this CPU runs against
// the scalar definition, bit for bit (any NaN matching any NaN), on every
// 61st float32 of [−40, 40] by bit pattern (both signs, all exponents down
// to the subnormals), the special values, and lengths that leave a tail
// after the whole vectors and span several blocks.
func TestGelu32KernelsMatch(t *testing.T) {
	var x []float32
	forty := math.Float32bits(40)
	for _, sign := range []uint32{0, 1 << 31} {
		for b := uint32(0); b <= forty; b += 61 {
			x = append(x, math.Float32frombits(sign|b))
		}
	}
	x = append(x, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, 1e-45, -1e-45, 18.4, -18.4, 13*math.Sqrt2, -13*math.Sqrt2)
	want := geluScalar(x)
	for _, k := range kernels() {
		t.Run(k.String(), func(t *testing.T) {
			for _, n := range []int{len(x), 7, 8, 9, PhiBlock + 13, 3*PhiBlock - 1} {
				xs := x[len(x)-n:]
				got := make([]float32, n)
				geluWith(k, got, xs)
				for i, g := range got {
					w := want[len(x)-n+i]
					if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
						t.Fatalf("n=%d: GELU(%v) [%#08x] = %v [%#08x], scalar %v [%#08x]", n, xs[i], math.Float32bits(xs[i]),
							g, math.Float32bits(g), w, math.Float32bits(w))
					}
				}
			}
			if k != scalar && !k.hasGelu() {
				t.Logf("%v has no GELU kernel: the scalar loop ran", k)
			}
		})
	}
}

// TestGeluGrad32KernelsMatch checks every GeluGrad32 kernel this CPU runs
// against the scalar loop, bit for bit (any NaN matching any NaN), with y
// GELU's output and g varied, on the inputs of TestGelu32KernelsMatch
// (every 61st float32 of [−40, 40], the special values) and lengths that
// leave a tail after the whole vectors.
func TestGeluGrad32KernelsMatch(t *testing.T) {
	var x []float32
	forty := math.Float32bits(40)
	for _, sign := range []uint32{0, 1 << 31} {
		for b := uint32(0); b <= forty; b += 61 {
			x = append(x, math.Float32frombits(sign|b))
		}
	}
	x = append(x, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, 1e-45, -1e-45, 18.4, -18.4)
	y, g := geluScalar(x), make([]float32, len(x))
	for i := range g {
		g[i] = float32(math.Sin(float64(i))) * 3
	}
	want := make([]float32, len(x))
	geluGradWith(scalar, want, x, y, g)
	for _, k := range kernels()[1:] {
		t.Run(k.String(), func(t *testing.T) {
			for _, n := range []int{len(x), 7, 8, 9, PhiBlock + 13} {
				o := len(x) - n
				got := make([]float32, n)
				geluGradWith(k, got, x[o:], y[o:], g[o:])
				for i, v := range got {
					w := want[o+i]
					if math.Float32bits(v) != math.Float32bits(w) && !(v != v && w != w) {
						t.Fatalf("n=%d: GELU'(%v) · %v = %v [%#08x], scalar %v [%#08x]", n, x[o+i], g[o+i],
							v, math.Float32bits(v), w, math.Float32bits(w))
					}
				}
			}
		})
	}
}
