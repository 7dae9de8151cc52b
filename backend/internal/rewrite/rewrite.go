// Package rewrite fuses patterns of ops in an ONNX graph into single
// nodes before the graph is lowered, as ONNX Runtime's optimizer passes
// do: a pass finds a pattern by the ops' types, attributes and readers,
// and replaces its last node by a fused node of this package's domain,
// which the op lowerings register like any op.
//
// What decides a fusion that the graph alone cannot tell (the values'
// shapes, whether a value is known when the graph is built, whether a
// constant holds the value the pattern needs) is checked when the fused
// node is lowered. A fused node therefore carries the node it replaces:
// its first inputs are that node's, its attributes that node's plus
// AttrFallback (the replaced op type) and AttrFallbackInputs (how many of
// the inputs are the replaced node's); Fallback gives the node back, and
// a fused node's lowering lowers it where the fusion does not apply. The
// other nodes of a pattern stay in the graph: their values are computed
// only if something else reads them.
package rewrite

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Domain is the op domain of fused nodes.
const Domain = "ai.paretonav.fused"

// The attributes a fused node adds to those of the node it replaces.
const (
	// AttrFallback is the replaced node's op type.
	AttrFallback = "paretonav_fallback"
	// AttrFallbackInputs is how many of the fused node's inputs are the
	// replaced node's (its first ones).
	AttrFallbackInputs = "paretonav_fallback_inputs"
)

// The fused op types, in the order the passes run; their lowerings are in
// package onnxops, in the file named after each.
const (
	Gelu           = "Gelu"           // the five ops PyTorch 1.13 writes for GELU (gelu.go)
	SiLU           = "SiLU"           // x·Sigmoid(x) (silu.go)
	ChannelShuffle = "ChannelShuffle" // Concat → Reshape → Transpose of ShuffleNet (shuffle.go)
	ShuffleSlice   = "ShuffleSlice"   // a Slice of the channels of a channel shuffle (shuffle.go)
	ConvConcat     = "ConvConcat"     // a pointwise Conv of a Concat along channels (conv.go)
	LayerNorm      = "LayerNorm"      // the nine ops exporters write for LayerNorm before opset 17 (norm_layer.go)
)

// Options choose the passes that run.
type Options struct {
	// Off names passes (fused op types) that do not run; tests turn one
	// off to compare the fused graph with the plain one.
	Off []string
}

// Apply returns gp with the patterns of the passes fused: a copy of gp
// whose node list replaces the last node of each pattern by its fused
// node (the same position, name and outputs). gp and its nodes are not
// modified.
func Apply(gp *onnxpb.GraphProto, opt Options) *onnxpb.GraphProto {
	g := newGraph(gp)
	for _, p := range passes {
		if !slices.Contains(opt.Off, p.op) {
			p.run(g)
		}
	}
	if len(g.fused) == 0 {
		return gp
	}
	out := &onnxpb.GraphProto{
		Name: gp.Name, Initializer: gp.Initializer, SparseInitializer: gp.SparseInitializer, DocString: gp.DocString,
		Input: gp.Input, Output: gp.Output, ValueInfo: gp.ValueInfo, QuantizationAnnotation: gp.QuantizationAnnotation,
	}
	out.Node = make([]*onnxpb.NodeProto, len(gp.Node))
	for i, n := range gp.Node {
		if f := g.fused[n]; f != nil {
			n = f
		}
		out.Node[i] = n
	}
	return out
}

// Fused reports whether n is a fused node of this package.
func Fused(n *onnxpb.NodeProto) bool { return n.GetDomain() == Domain }

// Fallback returns the node the fused node n replaced: its op type,
// inputs and attributes, with n's name and outputs.
func Fallback(n *onnxpb.NodeProto) *onnxpb.NodeProto {
	// fuse wrote the replaced node's attributes, then AttrFallback and
	// AttrFallbackInputs, then the pass's own.
	var op string
	k := len(n.Input)
	attrs := n.Attribute
	for i, a := range n.Attribute {
		if a.GetName() == AttrFallback {
			op, attrs = string(a.GetS()), n.Attribute[:i:i]
			k = int(AttrInt(n, AttrFallbackInputs, int64(k)))
			break
		}
	}
	return &onnxpb.NodeProto{Name: n.Name, OpType: &op, Input: n.Input[:k], Output: n.Output, Attribute: attrs, DocString: n.DocString}
}

// Extra returns the inputs of fused node n after the replaced node's.
func Extra(n *onnxpb.NodeProto) []string { return n.Input[len(Fallback(n).Input):] }

// AttrInt returns the int attribute name of n, or def.
func AttrInt(n *onnxpb.NodeProto, name string, def int64) int64 {
	for _, a := range n.Attribute {
		if a.GetName() == name && a.GetType() == onnxpb.AttributeProto_INT {
			return a.GetI()
		}
	}
	return def
}

// graph is what the passes know of an ONNX graph: who produces and how
// many nodes read each value, the graph's outputs, and the fused nodes
// made so far (by the node they replace).
type graph struct {
	gp      *onnxpb.GraphProto
	prod    map[string]*onnxpb.NodeProto
	readers map[string]int
	outputs map[string]bool
	fused   map[*onnxpb.NodeProto]*onnxpb.NodeProto
}

func newGraph(gp *onnxpb.GraphProto) *graph {
	g := &graph{gp: gp, prod: map[string]*onnxpb.NodeProto{}, readers: map[string]int{}, outputs: map[string]bool{},
		fused: map[*onnxpb.NodeProto]*onnxpb.NodeProto{}}
	countReads(gp, g.readers)
	for _, o := range gp.Output {
		g.outputs[o.GetName()] = true
	}
	for _, n := range gp.Node {
		if !defaultDomain(n) {
			continue
		}
		for _, o := range n.Output {
			if o != "" {
				g.prod[o] = n
			}
		}
	}
	return g
}

// countReads adds to readers how many times each name is an input of a
// node of gp or of a graph in one of their attributes (If, Loop, Scan
// bodies read outer names).
func countReads(gp *onnxpb.GraphProto, readers map[string]int) {
	for _, n := range gp.Node {
		for _, s := range n.Input {
			if s != "" {
				readers[s]++
			}
		}
		for _, a := range n.Attribute {
			if a.G != nil {
				countReads(a.G, readers)
			}
			for _, g := range a.Graphs {
				countReads(g, readers)
			}
		}
	}
}

func defaultDomain(n *onnxpb.NodeProto) bool { d := n.GetDomain(); return d == "" || d == "ai.onnx" }

// producer returns the node of the default domain that writes name when
// its op type is one of ops, else nil.
func (g *graph) producer(name string, ops ...string) *onnxpb.NodeProto {
	n := g.prod[name]
	if n == nil || !slices.Contains(ops, n.GetOpType()) {
		return nil
	}
	return n
}

// fuse records that fused op type op replaces node n, reading extra
// inputs after n's and carrying attrs besides n's.
func (g *graph) fuse(n *onnxpb.NodeProto, op string, extra []string, attrs ...*onnxpb.AttributeProto) {
	if g.fused[n] != nil {
		panic(fmt.Sprintf("rewrite: node %q fused twice", n.GetName()))
	}
	f := &onnxpb.NodeProto{Name: n.Name, OpType: proto.String(op), Domain: proto.String(Domain),
		Input: append(slices.Clone(n.Input), extra...), Output: n.Output, DocString: n.DocString}
	f.Attribute = append(slices.Clone(n.Attribute), stringAttr(AttrFallback, n.GetOpType()), intAttr(AttrFallbackInputs, int64(len(n.Input))))
	f.Attribute = append(f.Attribute, attrs...)
	g.fused[n] = f
}

func stringAttr(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

func intAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

// pass is one rewrite: the fused op type it makes and how it finds its
// patterns.
type pass struct {
	op  string
	run func(g *graph)
}

var passes = []pass{{Gelu, fuseGelus}, {SiLU, fuseSiLUs}, {ChannelShuffle, fuseShuffles}, {ShuffleSlice, fuseShuffleSlices}, {ConvConcat, fuseConvConcats}, {LayerNorm, fuseLayerNorms}}
