package onnxops

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// lowerKernel lowers node n over float32 input nodes of the given shapes
// (a nil shape: an absent optional input) in a float32 graph and returns
// the graph.KernelOp of its first output.
func lowerKernel(t *testing.T, lower func(*graph.Builder, *onnxpb.NodeProto, []*graph.Value) ([]*graph.Value, error), n *onnxpb.NodeProto, shapes ...[]int) *graph.KernelOp {
	t.Helper()
	b := graph.NewBuilder(tensor.Float32, 17)
	in := make([]*graph.Value, len(shapes))
	for i, s := range shapes {
		if s == nil {
			continue
		}
		in[i] = graph.NodeValue(G.NewTensor(b.Graph, tensor.Float32, len(s), G.WithShape(s...), G.WithName(n.Input[i])))
	}
	out, err := lower(b, n, in)
	if err != nil {
		t.Fatal(err)
	}
	op, ok := out[0].N.Op().(*graph.KernelOp)
	if !ok {
		t.Fatalf("%s lowered to %T, not a kernel", n.GetOpType(), out[0].N.Op())
	}
	return op
}

// checkKernel32 runs op's float32 closures and its float64 ones on the
// same random float32 data (scaled by scale), the float32 outputs and
// gradients into dirty buffers, and requires the float32 results to be the
// float64 ones rounded once, bit for bit (the graph.Forward32Func rule), for the
// output and the gradient of every differentiable input; it fails when a
// float32 closure declines.
func checkKernel32(t *testing.T, op *graph.KernelOp, seed int64, scale float64) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	fill := func(n int) ([]float32, []float64) {
		a, b := make([]float32, n), make([]float64, n)
		for i := range a {
			a[i] = float32(scale * r.NormFloat64())
			b[i] = float64(a[i])
		}
		return a, b
	}
	in32, in64 := make([][]float32, len(op.Ins)), make([][]float64, len(op.Ins))
	for i, s := range op.Ins {
		in32[i], in64[i] = fill(shape.Numel(s))
	}
	y32 := onnxtest.Dirty32(shape.Numel(op.Out))
	op.Fwd32(y32, in32)
	y64 := make([]float64, len(y32))
	op.Fwd(y64, in64)
	for i := range y32 {
		if !onnxtest.SameBits32(y32[i], float32(y64[i])) {
			t.Fatalf("%s: output %d = %v, float64 path %v", op.Kind, i, y32[i], float32(y64[i]))
		}
	}
	yr := make([]float64, len(y32)) // the backward passes read the float32 output
	for i, v := range y32 {
		yr[i] = float64(v)
	}
	g32, g64 := fill(len(y32))
	for k, s := range op.Ins {
		if !op.Diffs[k] {
			continue
		}
		d32 := onnxtest.Dirty32(shape.Numel(s))
		if !op.Bwd32(k, d32, in32, y32, g32) {
			t.Fatalf("%s: the float32 gradient of input %d declined", op.Kind, k)
		}
		d64 := make([]float64, len(d32))
		op.Bwd(k, d64, in64, yr, g64)
		for i := range d32 {
			if !onnxtest.SameBits32(d32[i], float32(d64[i])) {
				t.Fatalf("%s: gradient %d [%d] = %v, float64 path %v", op.Kind, k, i, d32[i], float32(d64[i]))
			}
		}
	}
}

// TestArithBroadcast32MatchesFloat64 checks the float32 kernels of Add,
// Sub, Mul, Div and Pow with broadcast operands (a per-channel scale as
// ConvNeXt's layer scale or a GroupNorm's affine, of 96 and of 7
// channels, a bias over the last axis, a scalar on either side, both
// sides broadcast, neither) against the float64 ones, bit for bit,
// including the gradients of the broadcast operands (float64 sums in the
// float64 path's order), on sizes that split across goroutines.
func TestArithBroadcast32MatchesFloat64(t *testing.T) {
	shapes := []struct {
		name string
		a, b []int
	}{
		{"channel scale", []int{96, 1, 1}, []int{4, 96, 8, 8}},
		{"channel scale, channels not a multiple of four", []int{7, 1, 1}, []int{3, 7, 5, 6}},
		{"bias last axis", []int{4, 8, 8, 96}, []int{96}},
		{"scalar right", []int{4, 3, 40, 40}, []int{}},
		{"scalar left", []int{1}, []int{4, 3, 40, 40}},
		{"both broadcast", []int{4, 1, 50}, []int{1, 60, 1}},
		{"gate per sample and channel", []int{4, 96, 8, 8}, []int{4, 96, 1, 1}},
		{"middle run both sides", []int{3, 7, 1}, []int{1, 7, 5}},
		{"run and index", []int{4, 1, 50}, []int{6, 1}},
		{"no broadcast", []int{4, 3, 20, 20}, []int{4, 3, 20, 20}}, // F.normalize's x / ‖x‖ after Expand
	}
	for _, opType := range []string{"Add", "Sub", "Mul", "Div", "Pow"} {
		for i, s := range shapes {
			t.Run(opType+" "+s.name, func(t *testing.T) {
				n := &onnxpb.NodeProto{Name: proto.String("n"), OpType: proto.String(opType), Input: []string{"a", "b"}, Output: []string{"y"}}
				op := lowerKernel(t, lowerArith, n, s.a, s.b)
				scale := 1.0
				if opType == "Pow" {
					scale = 0.5
				}
				checkKernel32(t, op, int64(i), scale)
			})
		}
	}
}

// TestLayerNorm32MatchesFloat64 checks LayerNormalization's float32
// kernels (output, ∂X, ∂Scale, ∂B) against the float64 ones, bit for bit,
// over the last axis (ConvNeXt's and the ViT's), the last two axes, and
// groups enough to split across goroutines, with and without B.
func TestLayerNorm32MatchesFloat64(t *testing.T) {
	cases := []struct {
		name  string
		x, sc []int
		axis  int64
		bias  bool
		scale float64
	}{
		{"last axis", []int{4, 8, 8, 96}, []int{96}, -1, true, 1},
		{"last axis no bias", []int{2, 17, 64}, []int{64}, -1, false, 3},
		{"two axes", []int{3, 5, 7}, []int{5, 7}, 1, true, 1},
		{"large values", []int{64, 48}, []int{48}, -1, true, 100},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ins := []string{"x", "scale", "b"}
			shapes := [][]int{c.x, c.sc, c.sc}
			if !c.bias {
				ins, shapes = ins[:2], shapes[:2]
			}
			n := &onnxpb.NodeProto{Name: proto.String("ln"), OpType: proto.String("LayerNormalization"),
				Input: ins, Output: []string{"y"}, Attribute: []*onnxpb.AttributeProto{onnxtest.AInt("axis", c.axis)}}
			op := lowerKernel(t, lowerLayerNorm, n, shapes...)
			if op.Fwd32 == nil {
				t.Fatal("no float32 kernels")
			}
			checkKernel32(t, op, int64(i), c.scale)
		})
	}
}

// TestMove32MatchesFloat64 checks the float32 kernels of data movement
// (move) against the float64 ones, bit for bit, with dirty outputs: a
// permutation (Transpose), two inputs (Concat), an input partly read
// (Slice: zeros elsewhere in its gradient), repeated reads (Expand: sums),
// and a plain copy (Reshape).
func TestMove32MatchesFloat64(t *testing.T) {
	transpose := make([]int, 0, 4*6*5)
	for a := 0; a < 4; a++ {
		for c := 0; c < 5; c++ {
			for b := 0; b < 6; b++ {
				transpose = append(transpose, a*30+b*5+c)
			}
		}
	}
	concat := make([]int, 0, 120+40)
	for r := 0; r < 20; r++ {
		for c := 0; c < 6; c++ {
			concat = append(concat, r*6+c)
		}
		for c := 0; c < 2; c++ {
			concat = append(concat, 120+r*2+c)
		}
	}
	var slice, expand []int
	for i := 0; i < 120; i += 3 {
		slice = append(slice, i)
	}
	for r := 0; r < 7; r++ {
		for i := 0; i < 120; i++ {
			expand = append(expand, i)
		}
	}
	big := make([]int, 1<<17) // long enough to split across goroutines
	for i := range big {
		big[i] = (i * 7919) % len(big)
	}
	cases := []struct {
		name string
		ins  [][]int
		idx  []int
	}{
		{"transpose", [][]int{{4, 6, 5}}, transpose},
		{"concat", [][]int{{20, 6}, {20, 2}}, concat},
		{"slice", [][]int{{120}}, slice},
		{"expand", [][]int{{120}}, expand},
		{"copy", [][]int{{4, 30}}, shape.Identity(120)},
		{"large permutation", [][]int{{len(big)}}, big},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := graph.NewBuilder(tensor.Float32, 17)
			var vals []*graph.Value
			for k, s := range c.ins {
				vals = append(vals, graph.NodeValue(G.NewTensor(b.Graph, tensor.Float32, len(s), G.WithShape(s...), G.WithName(string(rune('a'+k))))))
			}
			n := &onnxpb.NodeProto{Name: proto.String("m"), OpType: proto.String("Move")}
			v, err := b.Move(n, "Move", vals, []int{len(c.idx)}, c.idx)
			if err != nil {
				t.Fatal(err)
			}
			op := v.N.Op().(*graph.KernelOp)
			checkKernel32(t, op, int64(i), 1)
			// signed zeros in the output's gradient: the float64 path's
			// copy keeps −0, its sums into zeros give +0
			g32 := make([]float32, len(c.idx))
			g64 := make([]float64, len(g32))
			for j := range g32 {
				g32[j] = float32(j%5) - 2
				if j%3 == 0 {
					g32[j] = float32(math.Copysign(0, -1))
				}
				g64[j] = float64(g32[j])
			}
			for k, s := range c.ins {
				d32, d64 := onnxtest.Dirty32(shape.Numel(s)), make([]float64, shape.Numel(s))
				if !op.Bwd32(k, d32, nil, nil, g32) {
					t.Fatalf("the float32 gradient of input %d declined", k)
				}
				op.Bwd(k, d64, nil, nil, g64)
				for j := range d32 {
					if !onnxtest.SameBits32(d32[j], float32(d64[j])) {
						t.Fatalf("gradient %d [%d] with signed zeros = %v, float64 path %v", k, j, d32[j], float32(d64[j]))
					}
				}
			}
		})
	}
}

// TestErf32MatchesFloat64 checks Erf's float32 gradient (exponentials by
// vmath.Exp64) against the float64 formula, bit for bit, over lengths
// that leave tails of every size and split across goroutines.
func TestErf32MatchesFloat64(t *testing.T) {
	for i, size := range []int{1, 7, 255, 257, 100003} {
		n := &onnxpb.NodeProto{Name: proto.String("erf"), OpType: proto.String("Erf"), Input: []string{"x"}, Output: []string{"y"}}
		checkKernel32(t, lowerKernel(t, graph.Lookup("Erf", 13), n, []int{size}), int64(i), 2)
	}
}

// TestHardSwish32MatchesFloat64 checks HardSwish's float32 kernels
// against the float64 formulas, bit for bit, around the kinks (±3) and on
// a length that splits across goroutines.
func TestHardSwish32MatchesFloat64(t *testing.T) {
	n := &onnxpb.NodeProto{Name: proto.String("hs"), OpType: proto.String("HardSwish"), Input: []string{"x"}, Output: []string{"y"}}
	for i, size := range []int{9, 70001} {
		checkKernel32(t, lowerKernel(t, graph.Lookup("HardSwish", 14), n, []int{size}), int64(i), 4)
	}
}

// TestTranspose32MatchesFloat64 checks Transpose's float32 kernels (walking
// the axes, no index) against the float64 ones (an index per element),
// bit for bit, into dirty buffers: ConvNeXt's NCHW↔NHWC permutations, the
// default reversal, a last axis kept, and a size that splits across
// goroutines.
func TestTranspose32MatchesFloat64(t *testing.T) {
	for _, c := range []struct {
		xs, ms   []int
		perm, mp []int64
	}{
		{[]int{4, 2, 58, 8, 8}, []int{4, 2, 58, 64}, []int64{0, 2, 1, 3, 4}, []int64{0, 2, 1, 3}},
		{[]int{4, 96, 16, 16}, []int{4, 96, 256}, []int64{0, 2, 3, 1}, []int64{0, 2, 1}},
		{[]int{1, 3, 1, 4, 1}, []int{3, 4}, []int64{4, 3, 2, 0, 1}, []int64{1, 0}},
		{[]int{3, 4}, []int{12}, []int64{0, 1}, []int64{0}},
	} {
		ms, mp := mergeAxes(c.xs, c.perm)
		if !slices.Equal(ms, c.ms) || !slices.Equal(mp, c.mp) {
			t.Errorf("mergeAxes(%v, %v) = %v, %v; want %v, %v", c.xs, c.perm, ms, mp, c.ms, c.mp)
		}
	}
	cases := []struct {
		x    []int
		perm []int64
	}{
		{[]int{2, 3, 4, 5}, []int64{0, 2, 3, 1}},
		{[]int{2, 4, 5, 3}, []int64{0, 3, 1, 2}},
		{[]int{3, 4, 5}, nil},
		{[]int{3, 4, 5}, []int64{1, 0, 2}},
		{[]int{7}, []int64{0}},
		{[]int{4, 96, 16, 16}, []int64{0, 2, 3, 1}},
		// axes merged before the walk (mergeAxes): the channel shuffle's
		// planes, axes of size 1 dropped, all of them of size 1, a
		// reversal of merged pairs, nothing to merge but a kept last axis
		{[]int{2, 2, 3, 4, 5}, []int64{0, 2, 1, 3, 4}},
		{[]int{4, 2, 58, 8, 8}, []int64{0, 2, 1, 3, 4}},
		{[]int{1, 3, 1, 4, 1}, []int64{4, 3, 2, 0, 1}},
		{[]int{1, 1}, []int64{1, 0}},
		{[]int{2, 3, 4, 5, 6, 7}, []int64{4, 5, 2, 3, 0, 1}},
		{[]int{2, 1, 3, 4}, []int64{1, 3, 0, 2}},
		// the last two axes swapped in 8×8 blocks (transposeLast2), with
		// row and column tails, one matrix, and matrices too small for it
		{[]int{3, 13, 21}, []int64{0, 2, 1}},
		{[]int{2, 20, 3, 3}, []int64{0, 2, 3, 1}},
		{[]int{2, 3, 3, 20}, []int64{0, 3, 1, 2}},
		{[]int{17, 9}, []int64{1, 0}},
		{[]int{2, 7, 16}, []int64{0, 2, 1}},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(c.x, c.perm), func(t *testing.T) {
			n := &onnxpb.NodeProto{Name: proto.String("t"), OpType: proto.String("Transpose"), Input: []string{"x"}, Output: []string{"y"}}
			if c.perm != nil {
				n.Attribute = []*onnxpb.AttributeProto{onnxtest.AInts("perm", c.perm...)}
			}
			checkKernel32(t, lowerKernel(t, lowerTranspose, n, c.x), int64(i), 1)
		})
	}
}
