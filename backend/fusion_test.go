package backend

import (
	"math"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
)

// TestFuseGelu checks, for each grouping of the five ops, that the GELU
// output is computed by the fused op exactly when the pattern holds (not
// with a wrong constant, nor when an intermediate has another reader),
// and that a float32 model's losses and per-task gradients with the
// fusion match those without it (TestGeluPatternGrad checks the fused
// op's gradient).
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
	for _, tc := range []struct {
		variant string
		fused   bool
	}{
		{"torch", true}, {"half-first", true}, {"x-last", true},
		{"wrong-constant", false}, {"erf-read-twice", false},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			checkFusion(t, onnxtest.GeluTwoHead(tc.variant), rewrite.Gelu, "Gelu", tc.fused)
		})
	}
}

// TestFuseLayerNorm checks that the nine ops of a LayerNorm before opset
// 17 run as LayerNormalization in a float32 step (not where the pattern
// does not hold: a fourth power, a deviation read twice), and that the
// fused and unfused steps' losses and Jacobians agree to float32
// round-off (the fused op keeps its statistics in float64, the nine
// float32 ops round each step).
func TestFuseLayerNorm(t *testing.T) {
	for _, tc := range []struct {
		variant string
		fused   bool
	}{
		{"torch", true}, {"swapped", true}, {"pow4", false}, {"d-read-twice", false},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			checkFusion(t, onnxtest.LayerNormTwoHead(tc.variant), rewrite.LayerNorm, "LayerNormalization", tc.fused)
		})
	}
}

// checkFusion builds the two-head model m with the rewrite rule on and
// off and checks that its hidden value h is computed by the op named op
// exactly when the rule fires (fused), never without the rule, and that
// the two steps' losses and per-task gradients agree to 1e-5 of the
// largest entry (the tolerances' reasons are the callers').
func checkFusion(t *testing.T, m *importer.Model, rule, op string, fused bool) {
	t.Helper()
	specs := []string{"a:nll:logp:ya", "b:mse:reg:yb"}
	batch := twoHeadBatch(8)
	run := func(fuse bool) ([]float64, png.Jacobian, string) {
		var opt Options
		if !fuse {
			opt.build.Rewrites = rewrite.Options{Off: []string{rule}}
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
		var name string
		for _, c := range md.cache {
			name = c.bt.Vals["h"].N.Op().String()
		}
		return losses, jac, name
	}
	wl, wj, wop := run(false)
	gl, gj, gop := run(true)
	if strings.Contains(wop, op) {
		t.Fatalf("unfused: h is computed by %v", wop)
	}
	if got := strings.Contains(gop, op); got != fused {
		t.Fatalf("h is computed by %v; fused: want %v", gop, fused)
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
}

// TestFuseConcatConv checks that the small MTAN fixture's pointwise
// convolutions of channel Concats run fused (ops.ConvConcat, the Concats
// then not formed) and that its losses and J agree with the unfused
// program's to float32 round-off: the fused product sums each part's
// channels apart, then adds them.
func TestFuseConcatConv(t *testing.T) {
	var sc stepCase
	for _, c := range stepCases {
		if c.name == "mtan_small" {
			sc = c
		}
	}
	run := func(fuse bool) ([]float64, []float32, int, int) {
		var opt Options
		if !fuse {
			opt.build.Rewrites = rewrite.Options{Off: []string{rewrite.ConvConcat}}
		}
		md := openStepCaseWith(t, sc, opt)
		m := len(sc.tasks)
		losses := make([]float64, m)
		jac := png.NewJacobian(m, md.NumParams())
		if err := md.Evaluate(sc.batch(4), losses, &jac); err != nil {
			t.Fatal(err)
		}
		fused, concats := 0, 0
		for _, c := range md.cache {
			if c == nil || c.prog == nil {
				continue
			}
			for _, n := range c.prog.nodes {
				if n.Op() == nil {
					continue
				}
				s := n.Op().String()
				switch {
				case strings.HasPrefix(s, "ConvConcat{"):
					fused++
				case strings.HasPrefix(s, "Concat["):
					concats++
				}
			}
		}
		return losses, jac.Data, fused, concats
	}
	l0, j0, f0, c0 := run(false)
	l1, j1, f1, c1 := run(true)
	if f0 != 0 || c0 == 0 {
		t.Fatalf("unfused: %d fused nodes, %d Concats", f0, c0)
	}
	if f1 == 0 || c1 != 0 {
		t.Fatalf("fused: %d fused nodes, %d Concats left (the fixture's Concats all feed pointwise convolutions)", f1, c1)
	}
	for k := range l0 {
		if math.Abs(l1[k]-l0[k]) > 1e-5*math.Max(1, math.Abs(l0[k])) {
			t.Errorf("loss %d: fused %v, unfused %v", k, l1[k], l0[k])
		}
	}
	worst, scale := 0.0, 0.0
	for i := range j0 {
		worst = max(worst, math.Abs(float64(j1[i]-j0[i])))
		scale = max(scale, math.Abs(float64(j0[i])))
	}
	if worst > 1e-4*scale {
		t.Errorf("J: fused and unfused differ by %g (largest entry %g)", worst, scale)
	}
	t.Logf("%d of the fixture's pointwise convolutions fused; J differs by at most %g (largest entry %g)", f1, worst, scale)
}
