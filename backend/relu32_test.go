package backend

import (
	"math"
	"math/rand"
	"testing"
)

// TestRelu32MatchesFloat64 checks that Relu's float32 kernels give the
// bits of the float64 formula rounded once (the forward32Func rule), for
// special values and for a tensor long enough to be split among
// goroutines.
func TestRelu32MatchesFloat64(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1e-45, -1e-45, inf, -inf, nan}
	r := rand.New(rand.NewSource(5))
	long := make([]float32, 3*elemChunk+7)
	for i := range long {
		long[i] = special[r.Intn(len(special))] * float32(r.NormFloat64())
	}
	cases := []struct {
		name string
		x    []float32
	}{
		{"special", special},
		{"split", long},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := len(c.x)
			y := make([]float32, n)
			reluFwd32(y, [][]float32{c.x})
			g := make([]float32, n)
			for i := range g {
				g[i] = special[(i+3)%len(special)]
			}
			dx := make([]float32, n)
			if !reluBwd32(0, dx, [][]float32{nil}, y, g) {
				t.Fatal("reluBwd32 declined")
			}
			for i, v := range c.x {
				wantY := float32(math.Max(float64(v), 0))
				d := 0.0
				if float64(wantY) > 0 {
					d = 1
				}
				wantDx := float32(float64(g[i]) * d)
				if math.Float32bits(y[i]) != math.Float32bits(wantY) && !(y[i] != y[i] && wantY != wantY) {
					t.Fatalf("relu(%v) = %v, float64 path %v", v, y[i], wantY)
				}
				if math.Float32bits(dx[i]) != math.Float32bits(wantDx) && !(dx[i] != dx[i] && wantDx != wantDx) {
					t.Fatalf("relu'(%v)·%v = %v, float64 path %v", v, g[i], dx[i], wantDx)
				}
			}
		})
	}
}

// TestSigmoid32MatchesFloat64 checks Sigmoid's float32 kernels against the
// float64 formula rounded once, as TestRelu32MatchesFloat64 does Relu's.
func TestSigmoid32MatchesFloat64(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 20, -20, 90, -90, 1e-45, inf, -inf, nan}
	r := rand.New(rand.NewSource(7))
	long := make([]float32, 3*elemChunk+7)
	for i := range long {
		long[i] = float32(8 * r.NormFloat64())
	}
	cases := []struct {
		name string
		x    []float32
	}{
		{"special", special},
		{"split", long},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := len(c.x)
			y := make([]float32, n)
			sigmoidFwd32(y, [][]float32{c.x})
			g := make([]float32, n)
			for i := range g {
				g[i] = float32(r.NormFloat64())
			}
			g[0] = inf
			dx := make([]float32, n)
			if !sigmoidBwd32(0, dx, [][]float32{nil}, y, g) {
				t.Fatal("sigmoidBwd32 declined")
			}
			for i, v := range c.x {
				x := float64(v)
				var want float64
				if x >= 0 {
					want = 1 / (1 + math.Exp(-x))
				} else {
					e := math.Exp(x)
					want = e / (1 + e)
				}
				wantY := float32(want)
				yy := float64(y[i])
				wantDx := float32(float64(g[i]) * (yy * (1 - yy)))
				if math.Float32bits(y[i]) != math.Float32bits(wantY) && !(y[i] != y[i] && wantY != wantY) {
					t.Fatalf("sigmoid(%v) = %v, float64 formula %v", v, y[i], wantY)
				}
				if math.Float32bits(dx[i]) != math.Float32bits(wantDx) && !(dx[i] != dx[i] && wantDx != wantDx) {
					t.Fatalf("sigmoid'·%v at %v = %v, float64 formula %v", g[i], v, dx[i], wantDx)
				}
			}
		})
	}
}
