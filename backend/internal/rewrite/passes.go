package rewrite

import (
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// AttrGeluMul is 1 on a fused Gelu whose x/√2 is written x·(1/√2),
// 0 where it is x/√2.
const AttrGeluMul = "paretonav_gelu_mul"

// AttrConcatAxis is the axis attribute of the Concat a fused
// ChannelShuffle or ConvConcat reads the parts of.
const AttrConcatAxis = "paretonav_concat_axis"

// AttrSiLUX is the index among a fused SiLU's inputs of x, the other
// being Sigmoid(x).
const AttrSiLUX = "paretonav_silu_x"

// fuseGelus fuses the five ops PyTorch 1.13's exporter writes for GELU,
// Div(x, √2) → Erf → Add(·, 1) → Mul(x, ·) → Mul(·, 0.5): the operands
// of each in either order, the three factors of the two Muls in any
// grouping, x·(1/√2) for the Div; each of the four intermediate values
// read by the next op of the pattern only and not a graph output. The
// final Mul becomes a Gelu reading, after the Mul's two inputs, x and
// the constant operands (1, √2 or 1/√2, 0.5: whether they hold those
// values is checked when the graph is built, AttrGeluMul saying which of
// √2 and 1/√2).
func fuseGelus(g *graph) {
	// private returns the producer of name when it is an op of type op
	// with two inputs (one for Erf) whose output only the pattern reads.
	private := func(name, op string) *onnxpb.NodeProto {
		n := g.prod[name]
		if n == nil || n.GetOpType() != op || g.readers[name] != 1 || g.outputs[name] || len(n.Output) != 1 {
			return nil
		}
		if want := map[bool]int{true: 1, false: 2}[op == "Erf"]; len(n.Input) != want {
			return nil
		}
		return n
	}
	// erfPlusOne matches name = Add(Erf(Div(x, √2)), 1) and its variants:
	// the candidate x values, the names of the constants 1 and √2 (or
	// 1/√2), and whether the latter multiplies.
	type cand struct {
		x, one, root string
		mul          bool
	}
	erfPlusOne := func(name string) []cand {
		add := private(name, "Add")
		if add == nil {
			return nil
		}
		var out []cand
		for k := range 2 {
			erf := private(add.Input[k], "Erf")
			if erf == nil {
				continue
			}
			one := add.Input[1-k]
			if d := private(erf.Input[0], "Div"); d != nil {
				out = append(out, cand{d.Input[0], one, d.Input[1], false})
			}
			if d := private(erf.Input[0], "Mul"); d != nil {
				for j := range 2 {
					out = append(out, cand{d.Input[j], one, d.Input[1-j], true})
				}
			}
		}
		return out
	}
	for _, m := range g.gp.Node {
		if m.GetOpType() != "Mul" || len(m.Input) != 2 || len(m.Output) != 1 || !defaultDomain(m) || g.fused[m] != nil {
			continue
		}
	sides:
		for side := range 2 {
			inner := private(m.Input[side], "Mul")
			if inner == nil {
				continue
			}
			leaves := [3]string{inner.Input[0], inner.Input[1], m.Input[1-side]}
			for pi := range 3 {
				for _, c := range erfPlusOne(leaves[pi]) {
					for xi := range 3 {
						if xi == pi || leaves[xi] != c.x {
							continue
						}
						half := leaves[3-pi-xi]
						mul := int64(0)
						if c.mul {
							mul = 1
						}
						g.fuse(m, Gelu, []string{c.x, c.one, c.root, half}, intAttr(AttrGeluMul, mul))
						break sides
					}
				}
			}
		}
	}
}

// fuseSiLUs fuses a Mul of x by Sigmoid(x), either way round: the Mul
// becomes a SiLU reading the Mul's inputs, AttrSiLUX naming x. The
// Sigmoid stays for its other readers.
func fuseSiLUs(g *graph) {
	for _, m := range g.gp.Node {
		if m.GetOpType() != "Mul" || len(m.Input) != 2 || len(m.Output) != 1 || !defaultDomain(m) || g.fused[m] != nil {
			continue
		}
		for _, k := range []int{1, 0} { // the Sigmoid's input first: x is input 0
			s := g.producer(m.Input[k], "Sigmoid")
			if s != nil && len(s.Input) == 1 && s.Input[0] == m.Input[1-k] && s.Input[0] != "" {
				g.fuse(m, SiLU, nil, intAttr(AttrSiLUX, int64(1-k)))
				break
			}
		}
	}
}

// reshapes are the ops whose lowering gives a value a new shape without
// moving it (a plain copy).
var reshapes = []string{"Reshape", "Flatten", "Squeeze", "Unsqueeze"}

// shufflePerm reports whether perm is (0, 2, 1, 3, 4, …) of length at
// least 3.
func shufflePerm(perm []int64) bool {
	if len(perm) < 3 {
		return false
	}
	for i, p := range perm {
		want := int64(i)
		switch i {
		case 1:
			want = 2
		case 2:
			want = 1
		}
		if p != want {
			return false
		}
	}
	return true
}

// fuseShuffles fuses the channel shuffle of ShuffleNet as torchvision
// exports it: a Concat of G parts [N, C, rest…] along the channels,
// reshaped to [N, G, C, rest…] and transposed by (0, 2, 1, 3, …). The
// Transpose becomes a ChannelShuffle reading, after its input, the
// Concat's output and its parts (AttrConcatAxis the Concat's axis).
func fuseShuffles(g *graph) {
	for _, t := range g.gp.Node {
		if t.GetOpType() != "Transpose" || len(t.Input) != 1 || len(t.Output) != 1 || !defaultDomain(t) || g.fused[t] != nil {
			continue
		}
		if !shufflePerm(attrInts(t, "perm")) {
			continue
		}
		r := g.producer(t.Input[0], reshapes...)
		if r == nil || len(r.Input) == 0 {
			continue
		}
		c := g.producer(r.Input[0], "Concat")
		if c == nil || len(c.Output) != 1 || slices.Contains(c.Input, "") {
			continue
		}
		g.fuse(t, ChannelShuffle, append([]string{c.Output[0]}, c.Input...), intAttr(AttrConcatAxis, attrInt(c, "axis", 0)))
	}
}

// fuseShuffleSlices fuses a Slice of a reshaped fused channel shuffle
// (ShuffleNet's split of a block's channels in two): the Slice becomes a
// ShuffleSlice reading, after its inputs, the shuffle's output and the
// shuffle's parts.
func fuseShuffleSlices(g *graph) {
	shuffles := map[string][]string{} // a fused shuffle's output: its parts
	for t, f := range g.fused {
		if f.GetOpType() == ChannelShuffle {
			shuffles[t.Output[0]] = f.Input[2:]
		}
	}
	for _, s := range g.gp.Node {
		if s.GetOpType() != "Slice" || len(s.Input) == 0 || len(s.Output) != 1 || !defaultDomain(s) || g.fused[s] != nil {
			continue
		}
		r := g.producer(s.Input[0], reshapes...)
		if r == nil || len(r.Input) == 0 {
			continue
		}
		parts, ok := shuffles[r.Input[0]]
		if !ok {
			continue
		}
		g.fuse(s, ShuffleSlice, append([]string{r.Input[0]}, parts...))
	}
}

// fuseConvConcats fuses a Conv reading a Concat: the Conv becomes a
// ConvConcat reading, after its inputs, the Concat's parts
// (AttrConcatAxis the Concat's axis). It runs over the parts where the
// Concat is along the channels of 4-D values and the Conv is pointwise.
func fuseConvConcats(g *graph) {
	for _, cv := range g.gp.Node {
		if cv.GetOpType() != "Conv" || len(cv.Input) < 2 || len(cv.Output) != 1 || !defaultDomain(cv) || g.fused[cv] != nil {
			continue
		}
		c := g.producer(cv.Input[0], "Concat")
		if c == nil || len(c.Output) != 1 || slices.Contains(c.Input, "") {
			continue
		}
		g.fuse(cv, ConvConcat, slices.Clone(c.Input), intAttr(AttrConcatAxis, attrInt(c, "axis", 0)))
	}
}

// AttrLayerNormAxes is the axes attribute of the two ReduceMeans of a
// fused LayerNorm (they are the same).
const AttrLayerNormAxes = "paretonav_layernorm_axes"

// fuseLayerNorms fuses the nine ops PyTorch's exporters write for
// nn.LayerNorm before opset 17 (which has LayerNormalization):
//
//	mean = ReduceMean(x, axes)   d = Sub(x, mean)   p = Pow(d, 2)
//	var = ReduceMean(p, axes)    s = Sqrt(Add(var, eps))
//	y = Add(Mul(Div(d, s), scale), bias)
//
// the operands of the Add with eps, the Mul and the last Add in either
// order; both ReduceMeans with the same axes attribute and keepdims 1;
// d read by the Pow and the Div only, every other intermediate by the
// next op only, none of them a graph output. The last Add becomes a
// LayerNorm reading, after the Add's two inputs, x, scale, bias, eps and
// the exponent (AttrLayerNormAxes the axes): whether the axes are the
// trailing ones, the exponent is 2 and eps a single value is checked when
// the graph is built.
func fuseLayerNorms(g *graph) {
	private := func(name, op string, readers int) *onnxpb.NodeProto {
		n := g.prod[name]
		if n == nil || n.GetOpType() != op || g.readers[name] != readers || g.outputs[name] || len(n.Output) != 1 || slices.Contains(n.Input, "") {
			return nil
		}
		return n
	}
	mean := func(name string) (*onnxpb.NodeProto, []int64) {
		r := private(name, "ReduceMean", 1)
		if r == nil || len(r.Input) != 1 || attrInt(r, "keepdims", 1) != 1 {
			return nil, nil
		}
		axes := attrInts(r, "axes")
		if len(axes) == 0 {
			return nil, nil
		}
		return r, axes
	}
	for _, add := range g.gp.Node {
		if add.GetOpType() != "Add" || len(add.Input) != 2 || len(add.Output) != 1 || !defaultDomain(add) || g.fused[add] != nil {
			continue
		}
	sides:
		for side := range 2 {
			mul := private(add.Input[side], "Mul", 1)
			if mul == nil || len(mul.Input) != 2 {
				continue
			}
			bias := add.Input[1-side]
			for ms := range 2 {
				div := private(mul.Input[ms], "Div", 1)
				if div == nil || len(div.Input) != 2 {
					continue
				}
				scale := mul.Input[1-ms]
				sub := private(div.Input[0], "Sub", 2)
				sq := private(div.Input[1], "Sqrt", 1)
				if sub == nil || sq == nil || len(sub.Input) != 2 || len(sq.Input) != 1 {
					continue
				}
				x := sub.Input[0]
				m1, axes := mean(sub.Input[1])
				if m1 == nil || m1.Input[0] != x {
					continue
				}
				ae := private(sq.Input[0], "Add", 1)
				if ae == nil || len(ae.Input) != 2 {
					continue
				}
				for es := range 2 {
					m2, axes2 := mean(ae.Input[es])
					if m2 == nil || !slices.Equal(axes, axes2) {
						continue
					}
					pow := private(m2.Input[0], "Pow", 1)
					if pow == nil || len(pow.Input) != 2 || pow.Input[0] != sub.Output[0] {
						continue
					}
					g.fuse(add, LayerNorm, []string{x, scale, bias, ae.Input[1-es], pow.Input[1]}, axesAttr(AttrLayerNormAxes, axes))
					break sides
				}
			}
		}
	}
}

func axesAttr(name string, v []int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: slices.Clone(v)}
}

// AttrInts returns the ints attribute name of n, or nil.
func AttrInts(n *onnxpb.NodeProto, name string) []int64 { return attrInts(n, name) }

func attrInts(n *onnxpb.NodeProto, name string) []int64 {
	for _, a := range n.Attribute {
		if a.GetName() == name && a.GetType() == onnxpb.AttributeProto_INTS {
			return a.GetInts()
		}
	}
	return nil
}

func attrInt(n *onnxpb.NodeProto, name string, def int64) int64 { return AttrInt(n, name, def) }
