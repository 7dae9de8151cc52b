package onnxops

import (
	"math"
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/parallel"
)

// checkKernels32 runs an element-wise op's float32 kernels, fwd and bwd,
// on each case's input x (with the upstream gradient grad(n) for n
// elements) and checks that they give the bits of the float64 formulas
// rounded once (the forward32Func rule): wantY(x) for the output, and
// wantDx(y, g) for the input's gradient, with y the kernel's own output.
func checkKernels32(t *testing.T, op string, cases map[string][]float32, grad func(n int) []float32,
	fwd func(dst []float32, in [][]float32), bwd func(int, []float32, [][]float32, []float32, []float32) bool,
	wantY func(x float64) float64, wantDx func(y, g float64) float64) {
	t.Helper()
	for _, name := range []string{"special", "split"} {
		x := cases[name]
		t.Run(name, func(t *testing.T) {
			n := len(x)
			y := make([]float32, n)
			fwd(y, [][]float32{x})
			g := grad(n)
			dx := make([]float32, n)
			if !bwd(0, dx, [][]float32{nil}, y, g) {
				t.Fatalf("%s's backward kernel declined", op)
			}
			for i, v := range x {
				if want := float32(wantY(float64(v))); !onnxtest.SameBits32(y[i], want) {
					t.Fatalf("%s(%v) = %v, float64 formula %v", op, v, y[i], want)
				}
				if want := float32(wantDx(float64(y[i]), float64(g[i]))); !onnxtest.SameBits32(dx[i], want) {
					t.Fatalf("%s'·%v at %v = %v, float64 formula %v", op, g[i], v, dx[i], want)
				}
			}
		})
	}
}

// TestRelu32MatchesFloat64 checks that Relu's float32 kernels give the
// bits of the float64 formula rounded once (the forward32Func rule), for
// special values and for a tensor long enough to be split among
// goroutines.
func TestRelu32MatchesFloat64(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1e-45, -1e-45, inf, -inf, nan}
	r := rand.New(rand.NewSource(5))
	long := make([]float32, 3*parallel.ElemChunk+7)
	for i := range long {
		long[i] = special[r.Intn(len(special))] * float32(r.NormFloat64())
	}
	grad := func(n int) []float32 {
		g := make([]float32, n)
		for i := range g {
			g[i] = special[(i+3)%len(special)]
		}
		return g
	}
	checkKernels32(t, "relu", map[string][]float32{"special": special, "split": long}, grad, reluFwd32, reluBwd32,
		func(x float64) float64 { return math.Max(x, 0) },
		func(y, g float64) float64 {
			if y > 0 {
				return g
			}
			return g * 0
		})
}

// TestSigmoid32MatchesFloat64 checks Sigmoid's float32 kernels against the
// float64 formula rounded once, as TestRelu32MatchesFloat64 does Relu's.
func TestSigmoid32MatchesFloat64(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 20, -20, 90, -90, 1e-45, inf, -inf, nan}
	r := rand.New(rand.NewSource(7))
	long := make([]float32, 3*parallel.ElemChunk+7)
	for i := range long {
		long[i] = float32(8 * r.NormFloat64())
	}
	grad := func(n int) []float32 {
		g := make([]float32, n)
		for i := range g {
			g[i] = float32(r.NormFloat64())
		}
		g[0] = inf
		return g
	}
	checkKernels32(t, "sigmoid", map[string][]float32{"special": special, "split": long}, grad, sigmoidFwd32, sigmoidBwd32,
		func(x float64) float64 {
			if x >= 0 {
				return 1 / (1 + math.Exp(-x))
			}
			e := math.Exp(x)
			return e / (1 + e)
		},
		func(y, g float64) float64 { return g * (y * (1 - y)) })
}
