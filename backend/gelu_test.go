package backend

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/png"
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

// geluConstants returns Constant nodes of the constants the GELU patterns
// read (as PyTorch exports them: float initializers would be trainable).
func geluConstants() []*onnxpb.NodeProto {
	var out []*onnxpb.NodeProto
	for _, c := range []*importer.Tensor{
		importer.NewFloat32("sqrt2", nil, []float32{float32(math.Sqrt2)}),
		importer.NewFloat32("isqrt2", []int{1}, []float32{float32(1 / math.Sqrt2)}),
		importer.NewFloat32("sqrt2ish", nil, []float32{1.41}),
		importer.NewFloat32("one", nil, []float32{1}),
		importer.NewFloat32("half", nil, []float32{0.5}),
		importer.NewFloat32("zero1", nil, []float32{0}),
	} {
		name := "value"
		out = append(out, onnxtest.Node("Constant", "c_"+c.Name, nil, []string{c.Name},
			&onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_TENSOR.Enum(), T: onnxtest.TensorProto(c)}))
	}
	return out
}

// geluNodes returns the nodes computing h = GELU(h0) as PyTorch's
// exporters write it, in one of several groupings.
func geluNodes(variant string) []*onnxpb.NodeProto {
	switch variant {
	case "torch": // x/√2 → erf → +1 → x·() → ·0.5
		return []*onnxpb.NodeProto{
			onnxtest.Node("Div", "div", []string{"h0", "sqrt2"}, []string{"d"}),
			onnxtest.Node("Erf", "erf", []string{"d"}, []string{"e"}),
			onnxtest.Node("Add", "add", []string{"e", "one"}, []string{"a"}),
			onnxtest.Node("Mul", "mul1", []string{"h0", "a"}, []string{"m1"}),
			onnxtest.Node("Mul", "mul2", []string{"m1", "half"}, []string{"h"}),
		}
	case "half-first": // 0.5·x·(1 + erf(x·(1/√2)))
		return []*onnxpb.NodeProto{
			onnxtest.Node("Mul", "div", []string{"isqrt2", "h0"}, []string{"d"}),
			onnxtest.Node("Erf", "erf", []string{"d"}, []string{"e"}),
			onnxtest.Node("Add", "add", []string{"one", "e"}, []string{"a"}),
			onnxtest.Node("Mul", "mul1", []string{"half", "h0"}, []string{"m1"}),
			onnxtest.Node("Mul", "mul2", []string{"a", "m1"}, []string{"h"}),
		}
	case "x-last": // x·((1 + erf(x/√2))·0.5)
		return []*onnxpb.NodeProto{
			onnxtest.Node("Div", "div", []string{"h0", "sqrt2"}, []string{"d"}),
			onnxtest.Node("Erf", "erf", []string{"d"}, []string{"e"}),
			onnxtest.Node("Add", "add", []string{"e", "one"}, []string{"a"}),
			onnxtest.Node("Mul", "mul1", []string{"a", "half"}, []string{"m1"}),
			onnxtest.Node("Mul", "mul2", []string{"h0", "m1"}, []string{"h"}),
		}
	case "wrong-constant": // x/1.41: not GELU to float32 precision
		n := geluNodes("torch")
		n[0].Input[1] = "sqrt2ish"
		return n
	case "erf-read-twice": // the Erf's output also feeds the regression head
		return append(geluNodes("torch"), onnxtest.Node("Add", "extra", []string{"e", "zero1"}, []string{"e2"}))
	}
	panic(variant)
}

// geluTwoHead is twoHead with GELU in place of its Relu:
// x[N,4] → Gemm → GELU → {Gemm → LogSoftmax = logp, MatMul + bb = reg}.
func geluTwoHead(variant string) *importer.Model {
	r := rand.New(rand.NewSource(3))
	nodes := []*onnxpb.NodeProto{onnxtest.Node("Gemm", "fc1", []string{"x", "W1", "b1"}, []string{"h0"}, onnxtest.AInt("transB", 1))}
	nodes = append(nodes, geluNodes(variant)...)
	reg := "zb"
	nodes = append(nodes,
		onnxtest.Node("Gemm", "fca", []string{"h", "Wa"}, []string{"za"}),
		onnxtest.Node("LogSoftmax", "lsm", []string{"za"}, []string{"logp"}, onnxtest.AInt("axis", 1)),
		onnxtest.Node("MatMul", "mm", []string{"h", "Wb"}, []string{"zb"}))
	if variant == "erf-read-twice" {
		nodes = append(nodes, onnxtest.Node("MatMul", "mm2", []string{"e2", "Wb"}, []string{"zb2"}),
			onnxtest.Node("Add", "sum", []string{"zb", "zb2"}, []string{"zb3"}))
		reg = "zb3"
	}
	nodes = append(nodes, onnxtest.Node("Add", "addb", []string{reg, "bb"}, []string{"reg"}))
	w1 := onnxtest.RandF32(r, "W1", 6, 4)
	for i := range w1.F32 {
		w1.F32[i] *= 6 // pre-activations over [−8, 8]: every interval of Φ's approximations
	}
	inits := []*importer.Tensor{w1, onnxtest.RandF32(r, "b1", 6), onnxtest.RandF32(r, "Wa", 6, 3), onnxtest.RandF32(r, "Wb", 6, 2), onnxtest.RandF32(r, "bb", 2)}
	nodes = append(geluConstants(), nodes...)
	return onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {-1, 4}}, "logp", "reg")
}

// TestFuseGelu checks, for each grouping of the five ops, that the GELU
// output is computed by the fused op exactly when the pattern holds (not
// with a wrong constant, nor when an intermediate has another reader),
// that a float32 model's losses and per-task gradients with the fusion
// match those without it, and that the fused op's float64 gradient
// passes the finite-difference check.
//
// Tolerance of the float32 comparison: the fused op rounds x·Φ(x) once,
// the five float32 ops four times (x/√2, erf, 1 + erf, the two products)
// and their gradient eight times, and near x ≈ −3 the 1 + erf term
// cancels to a few float32 ulps of 1 (relative error up to 1e-2 of a
// value below 1e-3·|x|). Summed over the model's 6 hidden units those
// differences were 1e-7 of the largest loss or gradient entry here, and
// 1e-5 leaves room; a wrong formula (x·Φ off by a constant factor, the
// gradient missing x·φ(x)) moves them by far more than 1e-2.
func TestFuseGelu(t *testing.T) {
	specs := []string{"a:nll:logp:ya", "b:mse:reg:yb"}
	batch := twoHeadBatch(8)
	for _, tc := range []struct {
		variant string
		fused   bool
	}{
		{"torch", true}, {"half-first", true}, {"x-last", true},
		{"wrong-constant", false}, {"erf-read-twice", false},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			m := geluTwoHead(tc.variant)
			run := func(fuse bool) ([]float64, png.Jacobian, string) {
				var opt Options
				if !fuse {
					opt.rewrites = unfused(rewrite.Gelu)
				}
				md, err := Open(m, mustTasks(t, specs...), opt)
				if err != nil {
					t.Fatal(err)
				}
				losses := make([]float64, 2)
				jac := png.NewJacobian(2, md.NumParams())
				if err := md.Evaluate(batch, losses, &jac); err != nil {
					t.Fatal(err)
				}
				feeds := map[string]*importer.Tensor{"x": batch["x"]}
				op := testGraphWith(t, m, feeds, nil, opt.rewrites).Vals["h"].N.Op().String()
				return losses, jac, op
			}
			wl, wj, wop := run(false)
			gl, gj, gop := run(true)
			if strings.Contains(wop, "Gelu") {
				t.Fatalf("unfused: h is computed by %v", wop)
			}
			if got := strings.Contains(gop, "Gelu"); got != tc.fused {
				t.Fatalf("h is computed by %v; fused: want %v", gop, tc.fused)
			}
			worst := 0.0
			for i := range wl {
				scale := math.Abs(wl[i])
				for _, v := range wj.Row(i) {
					scale = math.Max(scale, math.Abs(float64(v)))
				}
				d := math.Abs(gl[i]-wl[i]) / scale
				for k, v := range wj.Row(i) {
					d = math.Max(d, math.Abs(float64(gj.Row(i)[k])-float64(v))/scale)
				}
				worst = math.Max(worst, d)
				if d > 1e-5 {
					t.Fatalf("task %s: fused and unfused differ by %.3g of the largest entry (losses %v and %v)", specs[i], d, gl[i], wl[i])
				}
			}
			t.Logf("largest difference: %.3g of the largest entry", worst)
			if tc.fused {
				x := onnxtest.RandFeed("x", 5, 3, 4)
				for i := range x.T.F64 {
					x.T.F64[i] *= 3
				}
				gradCheck(t, geluOnly(tc.variant), onnxtest.Feeds([]onnxtest.In{x}), "x", 1e-6)
			}
		})
	}
}

// geluOnly is the GELU pattern of variant alone, reading input x and
// writing h.
func geluOnly(variant string) *importer.Model {
	nodes := []*onnxpb.NodeProto{onnxtest.Node("Identity", "id", []string{"x"}, []string{"h0"})}
	nodes = append(nodes, geluNodes(variant)...)
	nodes = append(geluConstants(), nodes...)
	var inits []*importer.Tensor
	return onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {3, 4}}, "h")
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
