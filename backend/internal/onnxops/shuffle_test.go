package onnxops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/backend/internal/vmath"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// shuffleCase is a Concat of parts along axis concatAxis, a Reshape to
// grouped, a Transpose by perm and a Reshape back to the Concat's shape
// (torchvision's channel_shuffle after a ShuffleNet block's branches);
// fuses says whether the Transpose must run as the fused channel shuffle.
type shuffleCase struct {
	name       string
	parts      [][]int
	concatAxis int64
	grouped    []int
	perm       []int64
	fuses      bool
	catOut     bool // the Concat is a graph output too
	// slices, when set, are Slices of y (axis, start, end, step each)
	// that are the outputs instead of y; sliceFuses says how many of
	// them must run fused over the shuffle's parts.
	slices     [][4]int64
	sliceFuses int
}

var shuffleCases = []shuffleCase{
	{"shufflenet_groups2", [][]int{{2, 3, 4, 5}, {2, 3, 4, 5}}, 1, []int{2, 2, 3, 4, 5}, []int64{0, 2, 1, 3, 4}, true, false, nil, 0},
	{"groups3", [][]int{{1, 2, 3, 3}, {1, 2, 3, 3}, {1, 2, 3, 3}}, 1, []int{1, 3, 2, 3, 3}, []int64{0, 2, 1, 3, 4}, true, false, nil, 0},
	{"rank3", [][]int{{2, 4, 6}, {2, 4, 6}}, 1, []int{2, 2, 4, 6}, []int64{0, 2, 1, 3}, true, false, nil, 0},
	{"planes_1x1", [][]int{{3, 5, 1, 1}, {3, 5, 1, 1}}, 1, []int{3, 2, 5, 1, 1}, []int64{0, 2, 1, 3, 4}, true, false, nil, 0},
	{"concat_read_too", [][]int{{2, 3, 4, 5}, {2, 3, 4, 5}}, 1, []int{2, 2, 3, 4, 5}, []int64{0, 2, 1, 3, 4}, true, true, nil, 0},
	// the pattern does not hold: these keep the Concat and the Transpose
	{"unequal_parts", [][]int{{2, 2, 3, 3}, {2, 4, 3, 3}}, 1, []int{2, 2, 3, 3, 3}, []int64{0, 2, 1, 3, 4}, false, false, nil, 0},
	{"groups_not_parts", [][]int{{2, 4, 3, 3}, {2, 4, 3, 3}}, 1, []int{2, 4, 2, 3, 3}, []int64{0, 2, 1, 3, 4}, false, false, nil, 0},
	{"other_perm", [][]int{{2, 3, 4, 5}, {2, 3, 4, 5}}, 1, []int{2, 2, 3, 4, 5}, []int64{0, 1, 2, 4, 3}, false, false, nil, 0},
	{"swap_first", [][]int{{2, 3, 4, 5}, {2, 3, 4, 5}}, 1, []int{2, 2, 3, 4, 5}, []int64{1, 0, 2, 3, 4}, false, false, nil, 0},
	{"concat_axis2", [][]int{{2, 3, 2, 5}, {2, 3, 2, 5}}, 2, []int{2, 3, 2, 2, 5}, []int64{0, 2, 1, 3, 4}, false, false, nil, 0},
	{"concat_axis0", [][]int{{1, 6, 4, 5}, {1, 6, 4, 5}}, 0, []int{2, 2, 3, 4, 5}, []int64{0, 2, 1, 3, 4}, false, false, nil, 0},
	// Slices of the shuffled channels (a ShuffleNet block's two halves)
	{"halves", [][]int{{2, 3, 2, 2}, {2, 3, 2, 2}}, 1, []int{2, 2, 3, 2, 2}, []int64{0, 2, 1, 3, 4}, true, false,
		[][4]int64{{1, 0, 3, 1}, {1, 3, 6, 1}}, 2},
	{"halves_planes16", [][]int{{2, 4, 4, 4}, {2, 4, 4, 4}}, 1, []int{2, 2, 4, 4, 4}, []int64{0, 2, 1, 3, 4}, true, false,
		[][4]int64{{1, 0, 4, 1}, {1, 4, 8, 1}}, 2},
	{"odd_ranges_groups3", [][]int{{2, 2, 3, 3}, {2, 2, 3, 3}, {2, 2, 3, 3}}, 1, []int{2, 3, 2, 3, 3}, []int64{0, 2, 1, 3, 4}, true, false,
		[][4]int64{{1, 1, 5, 1}, {1, 0, 6, 1}, {1, 5, 6, 1}, {1, 2, 3, 1}}, 4},
	{"half_and_other_axis", [][]int{{2, 3, 2, 2}, {2, 3, 2, 2}}, 1, []int{2, 2, 3, 2, 2}, []int64{0, 2, 1, 3, 4}, true, false,
		[][4]int64{{1, 0, 3, 1}, {2, 0, 1, 1}}, 1},
	{"channel_step2", [][]int{{2, 3, 2, 2}, {2, 3, 2, 2}}, 1, []int{2, 2, 3, 2, 2}, []int64{0, 2, 1, 3, 4}, true, false,
		[][4]int64{{1, 0, 6, 2}, {1, 1, 6, 2}}, 0},
	{"unfused_shuffle", [][]int{{2, 2, 2, 2}, {2, 4, 2, 2}}, 1, []int{2, 2, 3, 2, 2}, []int64{0, 2, 1, 3, 4}, false, false,
		[][4]int64{{1, 0, 3, 1}, {1, 3, 6, 1}}, 0},
}

// model builds the case's graph: inputs p0, p1, …; output y (then cat).
func (c shuffleCase) model() (*importer.Model, map[string]*importer.Tensor) {
	var ins []onnxtest.In
	for i, s := range c.parts {
		ins = append(ins, onnxtest.RandFeed(fmt.Sprintf("p%d", i), int64(i+1), s...))
	}
	cat := append([]int{}, c.parts[0]...)
	cat[c.concatAxis] = 0
	for _, s := range c.parts {
		cat[c.concatAxis] += s[c.concatAxis]
	}
	m := onnxtest.OneNode("Concat", 13, []*onnxpb.AttributeProto{onnxtest.AInt("axis", c.concatAxis)}, ins, "cat")
	g := m.Proto.Graph
	toInt64 := func(s []int) []int64 {
		r := make([]int64, len(s))
		for i, v := range s {
			r[i] = int64(v)
		}
		return r
	}
	for _, t := range []onnxtest.In{onnxtest.InitI("grouped", []int{len(c.grouped)}, toInt64(c.grouped)...), onnxtest.InitI("back", []int{len(cat)}, toInt64(cat)...)} {
		g.Initializer = append(g.Initializer, onnxtest.TensorProto(t.T))
	}
	node := func(op, name string, in []string, out string, attrs ...*onnxpb.AttributeProto) {
		g.Node = append(g.Node, &onnxpb.NodeProto{Name: &name, OpType: &op, Input: in, Output: []string{out}, Attribute: attrs})
	}
	node("Reshape", "r0", []string{"cat", "grouped"}, "r")
	node("Transpose", "t", []string{"r"}, "tr", onnxtest.AInts("perm", c.perm...))
	node("Reshape", "r1", []string{"tr", "back"}, "y")
	y := "y"
	outs := []*onnxpb.ValueInfoProto{{Name: &y}}
	if c.slices != nil {
		outs = nil
	}
	for i, sl := range c.slices {
		name := fmt.Sprintf("s%d", i)
		var in []string
		for a, v := range []string{"starts", "ends", "axes", "steps"} {
			vn := fmt.Sprintf("%s_%s", name, v)
			g.Initializer = append(g.Initializer, onnxtest.TensorProto(onnxtest.InitI(vn, []int{1}, []int64{sl[1], sl[2], sl[0], sl[3]}[a]).T))
			in = append(in, vn)
		}
		node("Slice", name, append([]string{"y"}, in...), name)
		outs = append(outs, &onnxpb.ValueInfoProto{Name: &name})
	}
	if c.catOut {
		outs = append(outs, g.Output[0])
	}
	g.Output = outs
	return m, onnxtest.Feeds(ins)
}

// shuffleRun builds the case in dt with the fusion on or off and returns
// its outputs, the gradients of L = Σ w·y (w fixed) with respect to every
// part, and the number of fused channel shuffles and of Transposes in
// the graph.
func shuffleRun(t *testing.T, c shuffleCase, dt tensor.Dtype, fuse bool) (outs map[string][]float64, grads [][]float64, fused, transposes, slices int) {
	t.Helper()
	var rw rewrite.Options
	if !fuse {
		rw = unfused(rewrite.ChannelShuffle, rewrite.ShuffleSlice)
	}
	m, feeds := c.model()
	inits, err := m.Initializers()
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]int{}
	for k, v := range feeds {
		shapes[k] = v.Shape
	}
	bt, err := graph.Build(m.Proto.Graph, m.Opset(""), dt, shapes, inits, nil, false, graph.Options{Rewrites: rw})
	if err != nil {
		t.Fatalf("building: %v", err)
	}
	for k, n := range bt.Inputs {
		if err := graph.LetFloats(n, dt, feeds[k].Shape, feeds[k].Float64s()); err != nil {
			t.Fatal(err)
		}
	}
	var ys []graph.Node
	size := 0
	for _, o := range m.Proto.Graph.Output {
		if o.GetName() != "cat" {
			ys = append(ys, bt.Vals[o.GetName()].N)
			size += shape.Numel(bt.Vals[o.GetName()].Shape)
		}
	}
	r := rand.New(rand.NewSource(7))
	w := make([]float64, size)
	for i := range w {
		w[i] = 2*r.Float64() - 1
		if i%5 == 0 {
			w[i] = math.Copysign(0, -1) // −0 gradients reach the parts
		}
	}
	var wrt []graph.Node
	for i := range c.parts {
		wrt = append(wrt, bt.Inputs[fmt.Sprintf("p%d", i)])
	}
	_, gn, _ := weightedSumGrads(t, bt, ys, w, wrt...)
	outs = map[string][]float64{}
	for _, o := range m.Proto.Graph.Output {
		v, err := graph.ValueFloats(bt.Vals[o.GetName()].N.Value())
		if err != nil {
			t.Fatal(err)
		}
		outs[o.GetName()] = append([]float64{}, v...)
	}
	for _, g := range gn {
		v, err := graph.ValueFloats(g.Value())
		if err != nil {
			t.Fatal(err)
		}
		grads = append(grads, append([]float64{}, v...))
	}
	for _, n := range bt.B.Graph.AllNodes() {
		if op, ok := n.Op().(*graph.KernelOp); ok {
			fused += b2i(op.Kind == "ChannelShuffle")
			transposes += b2i(op.Kind == "Transpose")
			slices += b2i(op.Kind == "ShuffleSlice")
		}
	}
	return outs, grads, fused, transposes, slices
}

// TestFuseChannelShuffle checks the fused channel shuffle (shuffle.go)
// against the unfused Concat → Reshape → Transpose → Reshape, in float64
// and float32 graphs: the outputs and the gradients with respect to every
// part are the same bits (−0 gradients included: both give 0 + g), the
// fusion happens where the pattern holds (the Concat also read by the
// caller included) and not where it does not (parts of other sizes than
// the groups, other permutations, a Concat on another axis); Slices of
// the shuffled channels run over the parts (halves, odd ranges, overlaps,
// planes under and over 16 values) and Slices of another axis, with a
// step, or of an unfused shuffle do not; the fused kernels' float32
// closures match their float64 ones bit for bit, and the gradients pass
// the finite-difference check.
func TestFuseChannelShuffle(t *testing.T) {
	for _, c := range shuffleCases {
		t.Run(c.name, func(t *testing.T) {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				o0, g0, f0, t0, s0 := shuffleRun(t, c, dt, false)
				o1, g1, f1, t1, s1 := shuffleRun(t, c, dt, true)
				if f0 != 0 || t0 != 1 || s0 != 0 {
					t.Fatalf("%v unfused: %d fused shuffles, %d Transposes, %d fused Slices", dt, f0, t0, s0)
				}
				if s1 != c.sliceFuses {
					t.Fatalf("%v: %d fused Slices, want %d", dt, s1, c.sliceFuses)
				}
				if c.fuses && (f1 != 1 || t1 != 0) {
					t.Fatalf("%v: %d fused shuffles, %d Transposes; want the fused one alone", dt, f1, t1)
				}
				if !c.fuses && (f1 != 0 || t1 != 1) {
					t.Fatalf("%v: %d fused shuffles, %d Transposes; the pattern does not hold here", dt, f1, t1)
				}
				for name, want := range o0 {
					sameFloats(t, fmt.Sprintf("%v output %s", dt, name), o1[name], want)
				}
				for k := range g0 {
					sameFloats(t, fmt.Sprintf("%v gradient of p%d", dt, k), g1[k], g0[k])
				}
			}
			if !c.fuses {
				return
			}
			// the fused kernels' float32 closures against their float64
			// ones, as the model's float32 graph builds them
			m, feeds := c.model()
			inits, err := m.Initializers()
			if err != nil {
				t.Fatal(err)
			}
			shapes := map[string][]int{}
			for k, v := range feeds {
				shapes[k] = v.Shape
			}
			bt, err := graph.Build(m.Proto.Graph, m.Opset(""), tensor.Float32, shapes, inits, nil, false, graph.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checked := map[string]int{}
			for i, n := range bt.B.Graph.AllNodes() {
				if op, ok := n.Op().(*graph.KernelOp); ok && (op.Kind == "ChannelShuffle" || op.Kind == "ShuffleSlice") {
					checkKernel32(t, op, int64(3+i), 1)
					checked[op.Kind]++
				}
			}
			if checked["ChannelShuffle"] != 1 || checked["ShuffleSlice"] != c.sliceFuses {
				t.Fatalf("float32 graph: fused kernels %v, want 1 ChannelShuffle and %d ShuffleSlice", checked, c.sliceFuses)
			}
			for i := range c.parts {
				gradCheck(t, m, feeds, fmt.Sprintf("p%d", i), 1e-6)
			}
		})
	}
}

// sameFloats fails unless got and want hold the same bits.
func sameFloats(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s [%d]: fused %v, unfused %v", what, i, got[i], want[i])
		}
	}
}

// TestShuffleGradKernels checks the channel shuffle's gradient kernels
// directly, float32 with and without the wide-plane copy (vmath.PlusZero32),
// against their definitions bit for bit: part k's gradient is 0 + the
// output gradient on the planes the shuffle (or the slice) took from it,
// +0 on the planes a slice left out. Through the executor a −0 that the
// kernel left as −0 would be hidden: the two halves' gradients are summed
// into the part's, which makes −0 into +0 anyway. The gradients hold −0,
// and the destinations start as NaN so that a plane left unwritten shows.
func TestShuffleGradKernels(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	for _, inner := range []int{4, 15, 16, 33} {
		for _, wide := range []struct {
			name string
			f    func(d, s []float32)
		}{{"loop", nil}, {"wide", vmath.PlusZero32}} {
			const g, c, n = 2, 5, 3 // parts, planes per part and sample, samples
			rng := rand.New(rand.NewSource(int64(inner)))
			fill := func(v []float32) {
				for i := range v {
					if v[i] = float32(rng.NormFloat64()); i%3 == 0 {
						v[i] = negZero
					}
				}
			}
			name := fmt.Sprintf("inner%d/%s", inner, wide.name)
			check := func(what string, got []float32, want func(i int) float32) {
				t.Helper()
				for i, v := range got {
					if w := want(i); math.Float32bits(v) != math.Float32bits(w) {
						t.Errorf("%s: %s[%d] = %v (bits %#x), expected %v (bits %#x)", name, what, i, v, math.Float32bits(v), w, math.Float32bits(w))
						return
					}
				}
			}
			nanFilled := func(k int) []float32 {
				d := make([]float32, k)
				for i := range d {
					d[i] = float32(math.NaN())
				}
				return d
			}
			// The whole shuffle: planes p of part k are output planes p·g + k.
			grad := make([]float32, n*c*g*inner)
			fill(grad)
			for k := 0; k < g; k++ {
				dst := nanFilled(n * c * inner)
				shuffleBwd(k, dst, grad, g, n*c, inner, wide.f)
				check(fmt.Sprintf("shuffleBwd part %d", k), dst, func(i int) float32 {
					p, e := i/inner, i%inner
					return 0 + grad[(p*g+k)*inner+e]
				})
			}
			// A slice of the shuffled channels [c0, c1) of each sample.
			for _, r := range [][2]int{{0, c * g}, {0, c}, {c, c * g}, {3, 8}} {
				c0, c1 := r[0], r[1]
				w := c1 - c0
				sgrad := make([]float32, n*w*inner)
				fill(sgrad)
				sg := &shuffleGeom{parts: make([]graph.Node, g), n: n, c: c, inner: inner}
				for k := 0; k < g; k++ {
					dst := nanFilled(n * c * inner)
					shuffleSliceBwd(k, dst, sgrad, sg, c0, c1, wide.f)
					check(fmt.Sprintf("shuffleSliceBwd [%d,%d) part %d", c0, c1, k), dst, func(i int) float32 {
						s, p, e := i/(c*inner), i/inner%c, i%inner
						if j := p*g + k; j >= c0 && j < c1 {
							return 0 + sgrad[(s*w+j-c0)*inner+e]
						}
						return 0
					})
				}
			}
		}
	}
}

// TestShuffleSliceAllocatesNothing checks that a ShuffleNet-sized shuffle
// slice (4 samples of 24 planes of 8×8, one chunk) makes no heap object
// forward or backward: its kernels take their operands from sliceArgs and
// are called directly, where the func value of a generic kernel, even one
// that captures nothing, is a heap object (its type's dictionary).
func TestShuffleSliceAllocatesNothing(t *testing.T) {
	const n, g, c, inner = 4, 2, 12, 64
	sg := &shuffleGeom{parts: make([]graph.Node, g), n: n, c: c, inner: inner}
	in := [][]float32{make([]float32, n*c*inner), make([]float32, n*c*inner)}
	slice, part := make([]float32, n*c*inner), make([]float32, n*c*inner)
	if !parallel.OneChunk(n*c, inner) || !parallel.OneChunk(n, c*inner) {
		t.Fatal("not a one-chunk shuffle")
	}
	fwd := func() { shuffleSliceFwd(slice, in, sg, 0, c) }
	bwd := func() { shuffleSliceBwd(1, part, slice, sg, 0, c, vmath.PlusZero32) }
	for name, f := range map[string]func(){"forward": fwd, "backward": bwd} {
		f()
		if got := testing.AllocsPerRun(20, f); got != 0 {
			t.Errorf("%s: %.0f heap objects a call, want 0", name, got)
		}
	}
}
