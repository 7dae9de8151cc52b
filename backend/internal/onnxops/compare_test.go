package onnxops

import (
	"math/rand"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
)

// checkGraphORT runs model m (float32 graph inputs feeds; its
// initializers may be float32 or int64) in ONNX Runtime and in backend's
// float64 forward pass and compares every output within tol·(1+|ort|);
// integer and bool outputs must match exactly (tol is below their unit).
func checkGraphORT(t *testing.T, m *importer.Model, opset int64, feeds map[string]*importer.Tensor, tol float64) {
	t.Helper()
	ortcheck.Require(t)
	ir := int64(8)
	m.Proto.IrVersion = &ir
	m.Proto.OpsetImport[0].Version = &opset
	b, err := proto.Marshal(m.Proto)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ortcheck.RunBytes(b, feeds)
	if err != nil {
		t.Fatal(err)
	}
	got := forward(t, m, feeds)
	for _, o := range m.Proto.Graph.Output {
		name := o.GetName()
		w := want[name]
		if w == nil {
			t.Fatalf("ONNX Runtime gave no output %q", name)
		}
		onnxtest.AssertClose(t, name+" vs ONNX Runtime", got[name], w.Shape, w.Float64s(), tol)
	}
}

func castTo(name, in, out string, to importer.DataType) *onnxpb.NodeProto {
	return onnxtest.Node("Cast", name, []string{in}, []string{out}, onnxtest.AInt("to", int64(to)))
}

// compareModel computes every comparison and logic op on run-time float32
// values (x [2,3,4] against y [3,1], broadcast), on int64 and bool
// constants (a [2,1,4], c [4]), and on mixtures: run-time bools from
// comparisons meet constant bools in And/Or/Xor, flow into Where, Cast
// and Mul; Equal and Mod run on run-time values cast to int64.
func compareModel(r *rand.Rand) (*importer.Model, map[string]*importer.Tensor) {
	x := onnxtest.RandUniform32(r, "x", 2, 3, 4)
	y := onnxtest.RandUniform32(r, "y", 3, 1)
	for i := range x.F32 { // some exact ties with y's values for Equal and ≥
		if i%5 == 0 {
			x.F32[i] = y.F32[(i/4)%3]
		}
	}
	a := &importer.Tensor{Name: "a", Type: importer.Int64, Shape: []int{2, 1, 4}, I64: []int64{-3, 0, 2, 5, 1, 1, -7, 4}}
	c := &importer.Tensor{Name: "c", Type: importer.Int64, Shape: []int{4}, I64: []int64{1, 0, 2, -7}}
	three := &importer.Tensor{Name: "three", Type: importer.Int64, Shape: []int{}, I64: []int64{3}}
	mthree := &importer.Tensor{Name: "mthree", Type: importer.Int64, Shape: []int{1}, I64: []int64{-3}}
	four := importer.NewFloat32("four", []int{}, []float32{4})
	half := importer.NewFloat32("half", []int{1, 4}, []float32{0.75, -0.5, 1.25, -2})
	var nodes []*onnxpb.NodeProto
	var outs []string
	add := func(n *onnxpb.NodeProto, out bool) {
		nodes = append(nodes, n)
		if out {
			outs = append(outs, n.Output[0])
		}
	}
	for _, op := range []string{"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"} {
		add(onnxtest.Node(op, op+"_f", []string{"x", "y"}, []string{op + "_f"}), true)      // run-time float32
		add(onnxtest.Node(op, op+"_i", []string{"a", "c"}, []string{op + "_i"}), true)      // int64 constants
		add(onnxtest.Node(op, op+"_fc", []string{"half", "x"}, []string{op + "_fc"}), true) // constant vs run-time
	}
	add(castTo("ab", "a", "ab", importer.Bool), false) // bool constants
	add(castTo("cb", "c", "cb", importer.Bool), false)
	for _, op := range []string{"And", "Or", "Xor"} {
		add(onnxtest.Node(op, op+"_rr", []string{"Greater_f", "Less_fc"}, []string{op + "_rr"}), true) // run-time bools
		add(onnxtest.Node(op, op+"_cc", []string{"ab", "cb"}, []string{op + "_cc"}), true)             // constant bools
		add(onnxtest.Node(op, op+"_rc", []string{"Greater_f", "cb"}, []string{op + "_rc"}), true)      // mixed
	}
	add(onnxtest.Node("Not", "Not_r", []string{"Equal_f"}, []string{"Not_r"}), true)
	add(onnxtest.Node("Not", "Not_c", []string{"ab"}, []string{"Not_c"}), true)
	add(onnxtest.Node("Where", "Where_r", []string{"Greater_f", "x", "y"}, []string{"Where_r"}), true)
	add(onnxtest.Node("Where", "Where_c", []string{"cb", "x", "half"}, []string{"Where_c"}), true)
	add(castTo("gt_f", "Greater_f", "gt_f", importer.Float32), false)
	add(onnxtest.Node("Mul", "masked", []string{"gt_f", "x"}, []string{"masked"}), true)
	add(castTo("gt_i", "Greater_f", "gt_i", importer.Int64), true)
	add(castTo("x_b", "x", "x_b", importer.Bool), true)
	// run-time integers: ⌊4x⌋ toward zero, compared with and taken modulo
	// int64 constants of both signs
	add(onnxtest.Node("Mul", "x4", []string{"x", "four"}, []string{"x4"}), false)
	add(castTo("xi", "x4", "xi", importer.Int64), true)
	add(onnxtest.Node("Equal", "Equal_ri", []string{"xi", "c"}, []string{"Equal_ri"}), true)
	add(onnxtest.Node("Greater", "Greater_ri", []string{"xi", "a"}, []string{"Greater_ri"}), true)
	add(onnxtest.Node("Mod", "Mod_i3", []string{"xi", "three"}, []string{"Mod_i3"}), true)
	add(onnxtest.Node("Mod", "Mod_im3", []string{"xi", "mthree"}, []string{"Mod_im3"}), true)
	add(onnxtest.Node("Mod", "Mod_f", []string{"x4", "half"}, []string{"Mod_f"}, onnxtest.AInt("fmod", 1)), true)
	inits := []*importer.Tensor{a, c, three, mthree, four, half}
	m := onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {2, 3, 4}, "y": {3, 1}}, outs...)
	return m, map[string]*importer.Tensor{"x": x, "y": y}
}

// TestCompareLogicORT checks Equal, Greater, Less, GreaterOrEqual,
// LessOrEqual, And, Or, Xor, Not, Where, Cast to bool and int64 and Mod
// (run-time and constant operands, float32, int64 and bool, broadcast)
// against ONNX Runtime.
func TestCompareLogicORT(t *testing.T) {
	m, feeds := compareModel(rand.New(rand.NewSource(41)))
	checkGraphORT(t, m, 13, feeds, 1e-6)
}

// TestCompareOpsets checks that GreaterOrEqual and LessOrEqual lower from
// opset 12 on only.
func TestCompareOpsets(t *testing.T) {
	for _, op := range []string{"GreaterOrEqual", "LessOrEqual"} {
		ins := []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3), onnxtest.RandFeed("y", 2, 2, 3)}
		_, err := tryGraph(onnxtest.OneNode(op, 11, nil, ins, "z"), onnxtest.Feeds(ins), nil)
		if err == nil || !strings.Contains(err.Error(), op+" (node \"n0\", opset 11)") {
			t.Errorf("%s at opset 11: got %v, want an unsupported-op error naming it", op, err)
		}
		got := runOne(t, op, 12, nil, []onnxtest.In{onnxtest.Feed("x", []int{3}, 1, 2, 3), onnxtest.Feed("y", []int{1}, 2)})
		want := map[string][]float64{"GreaterOrEqual": {0, 1, 1}, "LessOrEqual": {1, 1, 0}}[op]
		onnxtest.AssertClose(t, op, got, []int{3}, want, 0)
	}
}

// whereModel is Where(Greater(x, 0), x, Mul(x, k)) + Where(Less(x, y), y, x)
// with y broadcast along x's rows: the gradient reaches x and y through
// the selected branches only.
func whereModel(k float64) *importer.Model {
	nodes := []*onnxpb.NodeProto{
		onnxtest.Node("Greater", "pos", []string{"x", "zero"}, []string{"pos"}),
		onnxtest.Node("Mul", "kx", []string{"x", "k"}, []string{"kx"}),
		onnxtest.Node("Where", "leaky", []string{"pos", "x", "kx"}, []string{"leaky"}),
		onnxtest.Node("Less", "lt", []string{"x", "y"}, []string{"lt"}),
		onnxtest.Node("Where", "maxxy", []string{"lt", "y", "x"}, []string{"maxxy"}),
		onnxtest.Node("Add", "sum", []string{"leaky", "maxxy"}, []string{"out"}),
	}
	inits := []*importer.Tensor{
		{Name: "zero", Type: importer.Float64, Shape: []int{}, F64: []float64{0}},
		{Name: "k", Type: importer.Float64, Shape: []int{}, F64: []float64{k}},
	}
	return onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {3, 4}, "y": {4}}, "out")
}

// TestWhereGrad checks the gradient through Where (x and a broadcast y)
// by central differences in float64, and that it is the branch's: 1 + 1
// where x > 0 and x ≥ y, k where x < 0 and x ≥ y, and so on.
func TestWhereGrad(t *testing.T) {
	x, y := onnxtest.RandFeed("x", 3, 3, 4), onnxtest.RandFeed("y", 4, 4)
	feeds := onnxtest.Feeds([]onnxtest.In{x, y})
	m := whereModel(2)
	gradCheck(t, m, feeds, "x", 1e-6)
	gradCheck(t, m, feeds, "y", 1e-6)
}

// TestCompareNoGradient checks that a loss reading only a comparison's
// output has a zero gradient with respect to the compared input, and
// that a graph of comparisons builds for training.
func TestCompareNoGradient(t *testing.T) {
	nodes := []*onnxpb.NodeProto{
		onnxtest.Node("Greater", "gt", []string{"x", "zero"}, []string{"gt"}),
		onnxtest.Node("Not", "not", []string{"gt"}, []string{"ngt"}),
		onnxtest.Node("Cast", "f", []string{"ngt"}, []string{"ngtf"}, onnxtest.AInt("to", int64(importer.Float32))),
		onnxtest.Node("Mul", "m", []string{"ngtf", "x"}, []string{"out"}),
	}
	inits := []*importer.Tensor{{Name: "zero", Type: importer.Float64, Shape: []int{}, F64: []float64{0}}}
	m := onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {2, 5}}, "out")
	// d(Σ w·[x ≤ 0]·x)/dx = w·[x ≤ 0]: the mask passes no gradient.
	gradCheck(t, m, onnxtest.Feeds([]onnxtest.In{onnxtest.RandFeed("x", 5, 2, 5)}), "x", 1e-6)
}

// TestCompareKernels32 checks the float32 closures of the comparison,
// Where and Mod kernels against their float64 ones, bit for bit.
func TestCompareKernels32(t *testing.T) {
	cases := []struct {
		op     string
		attrs  []*onnxpb.AttributeProto
		shapes [][]int
	}{
		{"Greater", nil, [][]int{{3, 70}, {70}}},
		{"Equal", nil, [][]int{{3, 70}, {3, 70}}},
		{"Xor", nil, [][]int{{3, 1}, {3, 70}}},
		{"Not", nil, [][]int{{5, 50}}},
		{"Where", nil, [][]int{{4, 60}, {4, 60}, {4, 60}}},
		{"Where", nil, [][]int{{4, 60}, {60}, {4, 1}}},
		{"Mod", []*onnxpb.AttributeProto{onnxtest.AInt("fmod", 1)}, [][]int{{4, 60}, {60}}},
		{"Mod", nil, [][]int{{4, 60}, {4, 60}}},
	}
	for i, c := range cases {
		n := onnxtest.Node(c.op, "n", []string{"a", "b", "c"}[:len(c.shapes)], []string{"y"}, c.attrs...)
		checkKernel32(t, lowerKernel(t, graph.Lookup(c.op, 16), n, c.shapes...), int64(i), 3)
	}
}
