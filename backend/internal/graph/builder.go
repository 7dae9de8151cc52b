package graph

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/importer"
)

// builder lowers an ONNX graph into a Gorgonia graph for concrete input
// shapes. Every lowering function receives it.
type Builder struct {
	Graph *G.ExprGraph
	Dtype tensor.Dtype // element type of every float node (Float32 or Float64)
	Opset int64        // default-domain opset of the model
	// WholeConvKernels: convolutions keep the taps that read only
	// padding (Options.WholeConvKernels).
	WholeConvKernels bool
	// bnTrain: BatchNormalization uses batch statistics (Options.BatchNorm
	// "train") instead of its running statistics.
	BNTrain bool
	consts  map[*importer.Tensor]Node
	nconst  int
	// Deferred names integer model inputs whose values are not known
	// (Open's trial build): nodes depending on them are not lowered.
	Deferred []string
	// WinoScratch is the most scratch memory, in bytes, that a pass of
	// one of the graph's Winograd convolutions takes beyond the im2col
	// bands (ops.WinogradScratchBytes).
	WinoScratch int64
	// ColBand is the largest im2col band of the graph's convolutions,
	// colBatch the largest batched im2col matrix and colCache the im2col
	// matrices they keep, in bytes (ops.ColScratchBytes), with what other
	// ops keep from their forward passes for their gradients
	// (InstanceNormalization's statistics and a copy of its input).
	ColBand, ColBatch, ColCache int64
}

func NewBuilder(dt tensor.Dtype, opset int64) *Builder {
	return &Builder{Graph: G.NewGraph(), Dtype: dt, Opset: opset, consts: map[*importer.Tensor]Node{}}
}

// Node returns v as a Gorgonia node, turning a constant into a
// non-trainable input node holding its values (as floats of b.dt).
func (b *Builder) Node(v *Value) Node {
	if v.N != nil {
		return v.N
	}
	if n, ok := b.consts[v.C]; ok {
		return n
	}
	b.nconst++
	name := fmt.Sprintf("const#%d:%s", b.nconst, v.C.Name)
	val := MakeValue(b.Dtype, v.C.Shape, v.C.Float64s())
	var n Node
	if len(v.C.Shape) == 0 {
		n = G.NewScalar(b.Graph, b.Dtype, G.WithName(name), G.WithValue(val))
	} else {
		n = G.NewTensor(b.Graph, b.Dtype, len(v.C.Shape), G.WithShape(v.C.Shape...), G.WithName(name), G.WithValue(val))
	}
	b.consts[v.C] = n
	return n
}

// InputNode adds a run-time input node (a model input, a loss target, a
// parameter) of shape s.
func (b *Builder) InputNode(name string, s []int) Node {
	if len(s) == 0 {
		return G.NewScalar(b.Graph, b.Dtype, G.WithName(name))
	}
	return G.NewTensor(b.Graph, b.Dtype, len(s), G.WithShape(s...), G.WithName(name))
}

// Children returns the nodes n reads.
func (b *Builder) Children(n Node) []Node {
	it := b.Graph.From(n.ID())
	var out []Node
	for it.Next() {
		out = append(out, it.Node().(*G.Node))
	}
	return out
}

// KindOf is the kind of the kernel computing n ("Relu", "Concat", ...),
// or "" when a kernel does not.
func KindOf(n Node) string {
	if n == nil {
		return ""
	}
	if op, ok := n.Op().(*KernelOp); ok {
		return op.Kind
	}
	return ""
}

// PlainCopyOf returns the node whose values n holds under another shape
// (a Reshape's kernel, KernelOp.PlainCopy), or nil.
func (b *Builder) PlainCopyOf(n Node) Node {
	if n == nil {
		return nil
	}
	if op, ok := n.Op().(*KernelOp); ok && op.PlainCopy {
		if ch := b.Children(n); len(ch) == 1 {
			return ch[0]
		}
	}
	return nil
}
