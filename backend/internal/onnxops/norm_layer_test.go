package onnxops

import (
	"math/rand"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
)

// layerNormCases cover every axis of a rank-3 input, epsilon, stash_type,
// an omitted B and a Scale of fewer dimensions than the normalised shape.
func layerNormCases() []oracleCase {
	r := rand.New(rand.NewSource(17))
	return []oracleCase{
		{"axis -1 (ViT)", nil, []*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 3, 5), onnxtest.RandUniform32(r, "s", 5), onnxtest.RandUniform32(r, "b", 5)}},
		{"axis 1 eps 1e-2", []*onnxpb.AttributeProto{onnxtest.AInt("axis", 1), onnxtest.AFloat("epsilon", 1e-2)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 3, 4), onnxtest.RandUniform32(r, "s", 3, 4), onnxtest.RandUniform32(r, "b", 3, 4)}},
		{"axis 0 no B", []*onnxpb.AttributeProto{onnxtest.AInt("axis", 0)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 3, 2), onnxtest.RandUniform32(r, "s", 2, 3, 2), nil}},
		{"axis -2 Scale broadcast", []*onnxpb.AttributeProto{onnxtest.AInt("axis", -2), onnxtest.AInt("stash_type", 1)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 3, 4, 2), onnxtest.RandUniform32(r, "s", 1, 2), onnxtest.RandUniform32(r, "b", 4, 1)}},
		{"rank 4 channels-last (ConvNeXt)", []*onnxpb.AttributeProto{onnxtest.AFloat("epsilon", 1e-6)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 3, 3, 6), onnxtest.RandUniform32(r, "s", 6), onnxtest.RandUniform32(r, "b", 6)}},
	}
}

// TestLayerNormORT checks Y against ONNX Runtime.
func TestLayerNormORT(t *testing.T) {
	checkAgainstORT(t, "LayerNormalization", 17, layerNormCases(), 1e-5)
}

// TestLayerNormStatsORT checks the optional outputs Mean and InvStdDev
// against ONNX Runtime.
func TestLayerNormStatsORT(t *testing.T) {
	ortcheck.Require(t)
	r := rand.New(rand.NewSource(3))
	x := onnxtest.RandUniform32(r, "x", 2, 3, 4)
	inits := []*importer.Tensor{onnxtest.RandUniform32(r, "s", 3, 4), onnxtest.RandUniform32(r, "b", 3, 4)}
	node := onnxtest.Node("LayerNormalization", "ln", []string{"x", "s", "b"}, []string{"y", "mean", "inv"}, onnxtest.AInt("axis", -2), onnxtest.AFloat("epsilon", 0.1))
	m := onnxtest.GraphModel([]*onnxpb.NodeProto{node}, inits, map[string][]int64{"x": {2, 3, 4}}, "y", "mean", "inv")
	ir, opset := int64(8), int64(17)
	m.Proto.IrVersion, m.Proto.OpsetImport[0].Version = &ir, &opset
	b, err := proto.Marshal(m.Proto)
	if err != nil {
		t.Fatal(err)
	}
	feeds := map[string]*importer.Tensor{"x": x}
	want, err := ortcheck.RunBytes(b, feeds)
	if err != nil {
		t.Fatal(err)
	}
	got := forward(t, m, feeds)
	for _, o := range []string{"y", "mean", "inv"} {
		w := want[o]
		if w == nil {
			t.Fatalf("ONNX Runtime gave no output %q", o)
		}
		onnxtest.AssertClose(t, o+" vs ONNX Runtime", got[o], w.Shape, w.Float64s(), 1e-5)
	}
}

// TestLayerNormErrors checks that bad attributes and shapes name the node.
func TestLayerNormErrors(t *testing.T) {
	cases := []struct {
		name  string
		attrs []*onnxpb.AttributeProto
		scale []int
		want  string
	}{
		{"axis out of range", []*onnxpb.AttributeProto{onnxtest.AInt("axis", 3)}, []int{4}, "axis 3 out of range"},
		{"stash_type", []*onnxpb.AttributeProto{onnxtest.AInt("stash_type", 7)}, []int{4}, "stash_type 7"},
		{"Scale shape", nil, []int{3}, "does not broadcast"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3, 4), onnxtest.InitF("s", c.scale, make([]float64, shape.Numel(c.scale))...)}
			_, err := tryGraph(onnxtest.OneNode("LayerNormalization", 17, c.attrs, ins, "y"), onnxtest.Feeds(ins), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"n0"`) {
				t.Errorf("error %v: want one naming node \"n0\" and %q", err, c.want)
			}
		})
	}
}

// TestLayerNormGrad checks the gradients of Y in X, Scale and B, and of
// Mean and InvStdDev in X, by central finite differences.
func TestLayerNormGrad(t *testing.T) {
	for _, c := range layerNormCases() {
		t.Run(c.name, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("x", c.ins[0].Shape, c.ins[0].Float64s()...)}
			wrts := []string{"x"}
			for j, name := range []string{"s", "b"} {
				if in := c.ins[j+1]; in != nil {
					ins = append(ins, onnxtest.InitF(name, in.Shape, in.Float64s()...))
					wrts = append(wrts, name)
				}
			}
			m := onnxtest.OneNode("LayerNormalization", 17, c.attrs, ins, "y", "mean", "inv")
			for _, wrt := range wrts {
				gradCheck(t, m, onnxtest.Feeds(ins), wrt, 1e-5)
			}
			// gradCheck differentiates the first graph output: put Mean,
			// then InvStdDev, first.
			outs := m.Proto.Graph.Output
			for _, k := range []int{1, 2} {
				m.Proto.Graph.Output = []*onnxpb.ValueInfoProto{outs[k]}
				gradCheck(t, m, onnxtest.Feeds(ins), "x", 1e-5)
			}
		})
	}
}

// TestLayerNormPatternFused checks that the nine ops PyTorch writes for
// LayerNorm before opset 17 run as LayerNormalization (its operands
// either way round, over one or two trailing axes), its outputs those of
// the nine ops to float64 round-off and its gradients in x, the scale and
// the shift passing the finite-difference check; and that a fourth power
// in place of the square, or a deviation read outside the pattern, leaves
// the ops as they are.
func TestLayerNormPatternFused(t *testing.T) {
	for _, c := range []struct {
		variant string
		fused   bool
	}{{"torch", true}, {"swapped", true}, {"two-axes", true}, {"pow4", false}, {"d-read-twice", false}} {
		t.Run(c.variant, func(t *testing.T) {
			x := onnxtest.RandFeed("x", 6, 3, 5, 6)
			for i := range x.T.F64 {
				x.T.F64[i] = 3*x.T.F64[i] + 1 // a mean and a spread away from 0 and 1
			}
			m, feeds := onnxtest.LayerNormOnly(c.variant), onnxtest.Feeds([]onnxtest.In{x})
			op := testGraph(t, m, feeds, nil).Vals["h"].N.Op().String()
			if got := strings.Contains(op, "LayerNormalization"); got != c.fused {
				t.Fatalf("h is computed by %v; fused: want %v", op, c.fused)
			}
			out := m.Proto.Graph.Output[0].GetName()
			got := forward(t, m, feeds)[out]
			want := forwardWith(t, m, feeds, rewrite.Options{Off: []string{rewrite.LayerNorm}})[out]
			onnxtest.AssertClose(t, out, got, want.Shape, want.Float64s(), 1e-12)
			for _, wrt := range []string{"x", "lnw", "lnb"} {
				gradCheck(t, m, feeds, wrt, 1e-6)
			}
		})
	}
}
