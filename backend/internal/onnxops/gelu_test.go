package onnxops

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// phiRef is Φ(x) from math.Erfc, accurate to float64 round-off for either
// sign.
func phiRef(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// TestPhiBlockAccuracy bounds phiBlock's error against math.Erfc and
// math.Erf in float64 on a dense grid over [−40, 40] and on ±0, ±Inf and
// NaN: for |x| ≤ 18 (z = |x|/√2 ≤ 13, the fitted range) Φ within 5e-10
// relative (the fit's 3e-10 plus float64 round-off) and 2Φ − 1 within
// 5e-10 of math.Erf; beyond, Φ is 1 within 1e-15 or below 1e-70. The GELU
// kernel built on it then gives float32(x·Φ(x)) to within one float32 ulp
// (checked with geluFwd32 on every grid point that is a float32).
func TestPhiBlockAccuracy(t *testing.T) {
	var xs []float64
	for x := -40.0; x <= 40; x += 1.0 / 4096 {
		xs = append(xs, x)
	}
	xs = append(xs, 1e-300, -1e-300, 1e-20, -1e-20, 13*math.Sqrt2, -13*math.Sqrt2)
	phi := make([]float64, len(xs))
	phiBlock(phi, xs)
	worstRel, worstAbs := 0.0, 0.0
	for i, x := range xs {
		want := phiRef(x)
		if math.Abs(x) > 13*math.Sqrt2 {
			if (x > 0 && math.Abs(phi[i]-1) > 1e-15) || (x < 0 && phi[i] > 1e-70) {
				t.Fatalf("Φ(%v) = %v, math.Erfc gives %v", x, phi[i], want)
			}
			continue
		}
		r := math.Abs(phi[i]-want) / want
		worstRel = max(worstRel, r)
		e := 2*phi[i] - 1
		d := math.Abs(e - math.Erf(x/math.Sqrt2))
		worstAbs = max(worstAbs, d)
		if r > 5e-10 || d > 5e-10 {
			t.Fatalf("Φ(%v) = %v, math.Erfc gives %v (relative error %.3g); erf %v, math.Erf %v", x, phi[i], want, r, e, math.Erf(x/math.Sqrt2))
		}
	}
	t.Logf("%d points: Φ worst relative error %.3g, erf worst absolute error %.3g", len(xs), worstRel, worstAbs)

	// Special values: Φ(±0) = ½ (within the fit's error), Φ(+Inf) = 1,
	// Φ(−Inf) = 0, NaN stays NaN;
	// GELU keeps the sign of zero and gives x·Φ(x) (NaN at −Inf, as the
	// formula ½x(1 + erf(x/√2)) does).
	sp := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN()}
	sphi := make([]float64, len(sp))
	phiBlock(sphi, sp)
	for i, want := range []float64{0.5, 0.5, 1, 0, math.NaN()} {
		if !(math.Abs(sphi[i]-want) <= 5e-10) && !(math.IsNaN(want) && math.IsNaN(sphi[i])) {
			t.Errorf("Φ(%v) = %v, want %v", sp[i], sphi[i], want)
		}
	}
	x32 := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	y32 := make([]float32, len(x32))
	geluFwd32(y32, [][]float32{x32})
	if math.Float32bits(y32[0]) != 0 || math.Float32bits(y32[1]) != 1<<31 || !math.IsInf(float64(y32[2]), 1) ||
		!math.IsNaN(float64(y32[3])) || !math.IsNaN(float64(y32[4])) {
		t.Errorf("GELU of %v = %v, want [0 -0 +Inf NaN NaN]", x32, y32)
	}

	// float32 GELU against the correctly rounded float32(x·Φ(x)).
	var in []float32
	for _, x := range xs {
		if float64(float32(x)) == x {
			in = append(in, float32(x))
		}
	}
	out := make([]float32, len(in))
	geluFwd32(out, [][]float32{in})
	for i, v := range in {
		want := float32(float64(v) * phiRef(float64(v)))
		if d := math.Abs(float64(out[i]) - float64(want)); d > ulp32(want) {
			t.Fatalf("GELU(%v) = %v, want %v", v, out[i], want)
		}
	}
}

// ulp32 is the spacing of float32 values at v.
func ulp32(v float32) float64 {
	a := float32(math.Abs(float64(v)))
	return float64(math.Nextafter32(a, float32(math.Inf(1))) - a)
}

// TestGeluPatternGrad checks that each grouping of the five ops PyTorch
// writes for GELU runs as the fused op, whose float64 gradient passes the
// finite-difference check.
func TestGeluPatternGrad(t *testing.T) {
	for _, variant := range []string{"torch", "half-first", "x-last"} {
		t.Run(variant, func(t *testing.T) {
			x := onnxtest.RandFeed("x", 5, 3, 4)
			for i := range x.T.F64 {
				x.T.F64[i] *= 3
			}
			m, feeds := onnxtest.GeluOnly(variant), onnxtest.Feeds([]onnxtest.In{x})
			if op := testGraph(t, m, feeds, nil).Vals["h"].N.Op().String(); !strings.Contains(op, "Gelu") {
				t.Fatalf("h is computed by %v, not the fused op", op)
			}
			gradCheck(t, m, feeds, "x", 1e-6)
		})
	}
}

// TestGeluOpFused checks that the ONNX Gelu op (approximate "none") runs
// as the fused op, its outputs those of ½x·erfc(−x/√2) to float64
// round-off, and its gradient passes the finite-difference check.
func TestGeluOpFused(t *testing.T) {
	x := onnxtest.RandFeed("x", 9, 4, 7)
	for i := range x.T.F64 {
		x.T.F64[i] *= 9
	}
	m := onnxtest.OneNode("Gelu", 20, nil, []onnxtest.In{x}, "y")
	feeds := onnxtest.Feeds([]onnxtest.In{x})
	if op := testGraph(t, m, feeds, nil).Vals["y"].N.Op().String(); !strings.Contains(op, "Gelu") {
		t.Fatalf("y is computed by %v", op)
	}
	want := make([]float64, len(x.T.F64))
	for i, v := range x.T.F64 {
		want[i] = v * phiRef(v)
	}
	onnxtest.AssertClose(t, "y", forward(t, m, feeds)["y"], x.T.Shape, want, 1e-14)
	gradCheck(t, m, feeds, "x", 1e-6)
}

// TestGeluBwd32 checks the float32 gradient kernel, which takes Φ(x) as
// y/x from the forward pass's float32 output, against Φ(x) + x·φ(x) in
// float64 on every float32 of a dense grid over [−40, 40] and on ±0 and
// ±Inf: within one float32 ulp of the result plus one of Φ(x) (y's
// rounding, carried through y/x; it dominates only near x ≈ −0.75, where
// the derivative crosses 0), plus 1e-44 where y underflows.
func TestGeluBwd32(t *testing.T) {
	var x []float32
	for v := -40.0; v <= 40; v += 1.0 / 1024 {
		x = append(x, float32(v))
	}
	x = append(x, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -1e-40)
	y, g, d := make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(x))
	for i := range g {
		g[i] = 1
	}
	geluFwd32(y, [][]float32{x})
	geluBwd32(0, d, [][]float32{x}, y, g)
	for i, v := range x {
		f := float64(v)
		p := phiRef(f)
		want := p
		if !math.IsInf(f, 0) {
			want += f * math.Exp(-0.5*f*f) / math.Sqrt(2*math.Pi)
		}
		tol := ulp32(float32(want)) + ulp32(float32(p)) + 1e-44
		if math.Abs(float64(d[i])-want) > tol {
			t.Fatalf("GELU'(%v) = %v, want %v (tolerance %.3g)", v, d[i], want, tol)
		}
	}
}

func geluCases() []oracleCase {
	r := rand.New(rand.NewSource(20))
	x := func() *importer.Tensor {
		t := onnxtest.RandUniform32(r, "x", 3, 7)
		for i := range t.F32 {
			t.F32[i] *= 4 // cover the tails
		}
		return t
	}
	return []oracleCase{
		{"erf", nil, []*importer.Tensor{x()}},
		{"erf explicit", []*onnxpb.AttributeProto{onnxtest.AString("approximate", "none")}, []*importer.Tensor{x()}},
		{"tanh", []*onnxpb.AttributeProto{onnxtest.AString("approximate", "tanh")}, []*importer.Tensor{x()}},
	}
}

// TestGeluORT checks Gelu (opset 20) against ONNX Runtime.
func TestGeluORT(t *testing.T) { checkAgainstORT(t, "Gelu", 20, geluCases(), 1e-6) }

// TestGeluGrad checks both forms' derivatives by central differences.
func TestGeluGrad(t *testing.T) {
	for _, c := range geluCases() {
		t.Run(c.name, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("x", c.ins[0].Shape, c.ins[0].Float64s()...)}
			gradCheck(t, onnxtest.OneNode("Gelu", 20, c.attrs, ins, "y"), onnxtest.Feeds(ins), "x", 1e-6)
		})
	}
}

// TestGeluVersions checks that Gelu is lowered from opset 20 only and
// that a bad approximate is named.
func TestGeluVersions(t *testing.T) {
	ins := []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3)}
	_, err := tryGraph(onnxtest.OneNode("Gelu", 19, nil, ins, "y"), onnxtest.Feeds(ins), nil)
	if err == nil || !strings.Contains(err.Error(), "Gelu (node \"n0\", opset 19)") {
		t.Errorf("Gelu at opset 19: got %v, want an unsupported-op error naming Gelu", err)
	}
	_, err = tryGraph(onnxtest.OneNode("Gelu", 20, []*onnxpb.AttributeProto{onnxtest.AString("approximate", "erf")}, ins, "y"), onnxtest.Feeds(ins), nil)
	if err == nil || !strings.Contains(err.Error(), `approximate "erf"`) {
		t.Errorf("approximate erf: got %v", err)
	}
}
