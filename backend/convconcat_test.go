package backend

import (
	"fmt"
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
			opt.rewrites = unfused(rewrite.ConvConcat)
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
				fused += b2i(strings.HasPrefix(s, "ConvConcat{"))
				concats += b2i(strings.HasPrefix(s, "Concat["))
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

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// concatConvModel is Concat(a, b) along channels, read by a pointwise
// Conv (output y) and, when both, by the caller too (output cat).
func concatConvModel(both bool) (*importer.Model, map[string]*importer.Tensor) {
	a, b := onnxtest.RandFeed("a", 1, 2, 2, 3, 3), onnxtest.RandFeed("b", 2, 2, 3, 3, 3)
	r := rand.New(rand.NewSource(3))
	normals := func(n int) []float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = r.NormFloat64()
		}
		return d
	}
	w, bias := onnxtest.InitF("w", []int{4, 5, 1, 1}, normals(20)...), onnxtest.InitF("bias", []int{4}, normals(4)...)
	m := onnxtest.OneNode("Concat", 13, []*onnxpb.AttributeProto{onnxtest.AInt("axis", 1)}, []onnxtest.In{a, b}, "cat")
	g := m.Proto.Graph
	name, op := "conv", "Conv"
	g.Node = append(g.Node, &onnxpb.NodeProto{Name: &name, OpType: &op, Input: []string{"cat", "w", "bias"}, Output: []string{"y"}})
	g.Initializer = append(g.Initializer, onnxtest.TensorProto(w.T), onnxtest.TensorProto(bias.T))
	y := "y"
	outs := []*onnxpb.ValueInfoProto{{Name: &y}}
	if both {
		outs = append(outs, g.Output[0])
	}
	g.Output = outs
	return m, onnxtest.Feeds([]onnxtest.In{a, b})
}

// TestFuseConcatConvGraph checks the fusion on a two-node graph, with the
// Concat read only by the Conv and also by the caller (then it is still
// formed): the outputs agree with the unfused graph's to float64
// round-off, and the gradients with respect to a part and the weights
// pass the finite-difference check through the fused op.
func TestFuseConcatConvGraph(t *testing.T) {
	for _, both := range []bool{false, true} {
		t.Run(fmt.Sprintf("cat_read_too=%v", both), func(t *testing.T) {
			m, feeds := concatConvModel(both)
			want := forwardWith(t, m, feeds, unfused(rewrite.ConvConcat))
			got := forward(t, m, feeds)
			for name, w := range want {
				g := got[name]
				if g == nil {
					t.Fatalf("output %q missing with the fusion", name)
				}
				onnxtest.AssertClose(t, name, g, w.Shape, w.Float64s(), 1e-12)
			}
			if both && got["cat"] == nil {
				t.Fatal("the Concat read by the caller is not an output")
			}
			if y := testGraph(t, m, feeds, nil).Vals["y"]; !strings.HasPrefix(y.N.Op().String(), "ConvConcat{") {
				t.Fatalf("y is computed by %v, not the fused op", y.N.Op())
			}
			gradCheck(t, m, feeds, "a", 1e-6)
			gradCheck(t, m, feeds, "w", 1e-6)
		})
	}
}
