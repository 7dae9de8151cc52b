package onnxops

import (
	"math"
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
)

// TestArith32MatchesFloat64 checks the float32 Add, Sub, Mul and Div
// kernels and the Add, Sub and Mul gradients against the float64 formulas
// of ariths rounded once (the forward32Func rule), bit for bit, on special
// values (signed zeros, infinities, NaN, subnormals, the largest float32)
// against every other, and on a slice long enough to split. The outputs
// start dirty: the kernels fill every element (fillingKernel32).
func TestArith32MatchesFloat64(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 3, -0.5, 1e-45, -1e-40, math.MaxFloat32, -math.MaxFloat32, inf, -inf, nan}
	var a, c []float32
	for _, x := range special {
		for _, y := range special {
			a, c = append(a, x), append(c, y)
		}
	}
	r := rand.New(rand.NewSource(11))
	for i := 0; i < 3*parallel.ElemChunk; i++ {
		a, c = append(a, float32(r.NormFloat64()*math.Pow(10, float64(r.Intn(20)-10)))), append(c, float32(r.NormFloat64()))
	}
	g := make([]float32, len(a))
	for i := range g {
		g[i] = float32(r.NormFloat64())
	}
	g[0], g[1] = inf, nan
	for _, op := range []string{"Add", "Sub", "Mul", "Div"} {
		ar := ariths[op]
		dst := onnxtest.Dirty32(len(a))
		if !arith32(op, dst, a, c) {
			t.Fatalf("%s: the float32 kernel declined", op)
		}
		for i := range dst {
			if want := float32(ar.f(float64(a[i]), float64(c[i]))); !onnxtest.SameBits32(dst[i], want) {
				t.Fatalf("%s(%v, %v) = %v, float64 formula %v", op, a[i], c[i], dst[i], want)
			}
		}
		for k, d := range []func(a, b, y float64) float64{ar.da, ar.db} {
			grad := onnxtest.Dirty32(len(a))
			if !arithGrad32(op, k, grad, a, c, g) {
				if op == "Div" {
					continue // the quotient's gradients stay on the general loop
				}
				t.Fatalf("%s: the float32 gradient of input %d declined", op, k)
			}
			for i := range grad {
				want := float32(0)
				want += float32(float64(g[i]) * d(float64(a[i]), float64(c[i]), float64(dst[i])))
				if !onnxtest.SameBits32(grad[i], want) {
					t.Fatalf("%s: gradient %d at (%v, %v)·%v = %v, float64 formula %v", op, k, a[i], c[i], g[i], grad[i], want)
				}
			}
		}
	}
}

// TestArithChannelRuns32 checks the runs of Mul and Add against one
// per-channel value (a GroupNorm's affine over planes) and Mul's spread
// gradient, which run as vector kernels, against the float32 expressions
// element by element, bit for bit (any NaN matching any NaN), with
// infinities, NaN and signed zeros in X, the gradient and the channel
// values, on plane sizes at, above and below a vector and chunks that
// start inside a run.
func TestArithChannelRuns32(t *testing.T) {
	neg0 := float32(math.Copysign(0, -1))
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, plane := range []int{16, 17, 50, 64 * 64} {
		const n, c = 2, 5
		out := []int{n, c, plane}
		b := shape.NewBcast([]int{c, 1}, out)
		r := rand.New(rand.NewSource(int64(plane)))
		x, g := make([]float32, n*c*plane), make([]float32, n*c*plane)
		for i := range x {
			x[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		x[0], x[3], x[plane+1], x[2*plane+2] = neg0, 0, inf, nan
		g[1], g[4], g[plane+2], g[3*plane] = neg0, 0, -inf, nan
		ch := []float32{1.5, neg0, 0, -2, inf}
		same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
		for _, op := range []string{"Mul", "Add"} {
			dst := make([]float32, len(x))
			if !arithHalf32(op, dst, x, ch, nil, b) {
				t.Fatalf("%s plane %d: declined", op, plane)
			}
			for i, v := range x {
				want := v * ch[b.At(i)]
				if op == "Add" {
					want = v + ch[b.At(i)]
				}
				if !same(dst[i], want) {
					t.Fatalf("%s plane %d [%d]: %v, want %v", op, plane, i, dst[i], want)
				}
			}
		}
		dst := make([]float32, len(g))
		if !arithGradSpread32("Mul", 0, dst, x, ch, g, b) {
			t.Fatalf("Mul gradient plane %d: declined", plane)
		}
		for i, v := range g {
			if want := 0 + v*ch[b.At(i)]; !same(dst[i], want) {
				t.Fatalf("Mul gradient plane %d [%d]: %v, want %v", plane, i, dst[i], want)
			}
		}
	}
}
