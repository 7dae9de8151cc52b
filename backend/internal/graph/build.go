package graph

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/termsafe"
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
	// matrices they keep, in bytes (ops.ColScratchBytes).
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

// UnsupportedOp is one node backend cannot lower.
type UnsupportedOp struct {
	OpType string
	Domain string
	Node   string
	Opset  int64
}

// UnsupportedError lists every node of a model that backend cannot lower.
type UnsupportedError struct {
	Ops []UnsupportedOp
}

func (e *UnsupportedError) Error() string {
	var sb strings.Builder
	// No "backend: " here: Open and the others prefix every error once.
	fmt.Fprintf(&sb, "%d unsupported node(s):", len(e.Ops))
	for _, o := range e.Ops {
		op := o.OpType
		if o.Domain != "" {
			op = o.Domain + "." + op
		}
		fmt.Fprintf(&sb, "\n\t%s (node %q, opset %d)", termsafe.Name(op), o.Node, o.Opset)
	}
	return sb.String()
}

// noFold lists ops never folded at build time.
var noFold = map[string]bool{
	"RandomNormal": true, "RandomUniform": true, "RandomNormalLike": true,
	"RandomUniformLike": true, "Multinomial": true, "Bernoulli": true,
}

// lowerGraph lowers the nodes of gp given the values already bound
// (inputs, initializers) in vals, adding every node output to vals. It
// lowers as much as it can and reports every unsupported node (as an
// *UnsupportedError) together with any other lowering errors.
func (b *Builder) lowerGraph(gp *onnxpb.GraphProto, vals map[string]*Value) error {
	var unsupported []UnsupportedOp
	var errs []error
	unknown := map[string]bool{} // outputs of nodes that failed
	for _, d := range b.Deferred {
		unknown[d] = true
	}
	for _, n := range gp.Node {
		name := n.GetName()
		dom := n.GetDomain()
		if dom != "" && dom != "ai.onnx" && !rewrite.Fused(n) {
			unsupported = append(unsupported, UnsupportedOp{n.GetOpType(), dom, name, 0})
			markUnknown(n, unknown)
			continue
		}
		f := Lookup(n.GetOpType(), b.Opset)
		if rewrite.Fused(n) {
			f = fusedLowerings[n.GetOpType()]
		}
		in := make([]*Value, len(n.Input))
		blocked, allConst := false, true
		for j, s := range n.Input {
			if s == "" {
				continue
			}
			if unknown[s] {
				blocked = true
				continue
			}
			v, ok := vals[s]
			if !ok {
				errs = append(errs, NodeErr(n, "input %d %q is not produced by any earlier node, graph input or initializer", j, s))
				blocked = true
				continue
			}
			in[j] = v
			allConst = allConst && v.IsConst()
		}
		if !blocked {
			if err := checkSeqInputs(n, in); err != nil {
				errs = append(errs, err)
				blocked = true
			}
		}
		if blocked {
			if f == nil {
				unsupported = append(unsupported, UnsupportedOp{n.GetOpType(), "", name, b.Opset})
			}
			markUnknown(n, unknown)
			continue
		}
		if rewrite.Fused(n) && allConst {
			// known when the graph is built: fold the node it replaced
			n = rewrite.Fallback(n)
			in = in[:len(n.Input)]
			f = Lookup(n.GetOpType(), b.Opset)
		}
		var outs []*Value
		if allConst && !noFold[n.GetOpType()] {
			cin := make([]*importer.Tensor, len(in))
			for j, v := range in {
				if v != nil {
					cin[j] = v.C
				}
			}
			// importer.EvalNode evaluates a node whose inputs are all
			// constants; lowerings handle constants themselves where shape
			// arithmetic needs it, so a failure here only means "lower it
			// instead".
			if ts, err := importer.EvalNode(n, b.Opset, cin); err == nil {
				for _, t := range ts {
					outs = append(outs, ConstValue(t))
				}
			}
		}
		if outs == nil {
			if f == nil {
				unsupported = append(unsupported, UnsupportedOp{n.GetOpType(), "", name, b.Opset})
				markUnknown(n, unknown)
				continue
			}
			var err error
			outs, err = b.lowerNode(f, n, in)
			if err != nil {
				errs = append(errs, err)
				markUnknown(n, unknown)
				continue
			}
		}
		if len(outs) < len(n.Output) {
			// trailing outputs may be omitted only if unused
			for j := len(outs); j < len(n.Output); j++ {
				if n.Output[j] != "" {
					unknown[n.Output[j]] = true
				}
			}
		}
		for j, o := range n.Output {
			if j < len(outs) && o != "" && outs[j] != nil {
				vals[o] = outs[j]
			}
		}
	}
	var all []error
	if len(unsupported) > 0 {
		sort.SliceStable(unsupported, func(i, j int) bool { return unsupported[i].OpType < unsupported[j].OpType })
		all = append(all, &UnsupportedError{Ops: unsupported})
	}
	all = append(all, errs...)
	return errors.Join(all...)
}

// lowerNode runs one lowering, turning a panic into an error naming the
// node.
func (b *Builder) lowerNode(f LowerFunc, n *onnxpb.NodeProto, in []*Value) (outs []*Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = NodeErr(n, "panic while lowering (opset %d): %v", b.Opset, r)
		}
	}()
	outs, err = f(b, n, in)
	if err != nil {
		if !strings.Contains(err.Error(), fmt.Sprintf("node %q", n.GetName())) {
			err = NodeErr(n, "%v", err)
		}
		return nil, err
	}
	return outs, nil
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

// LowerFallback lowers the node that the fused node n replaced
// (rewrite.Fallback), reading the first of in: what a fused node's
// lowering does where the fusion does not apply.
func (b *Builder) LowerFallback(n *onnxpb.NodeProto, in []*Value) ([]*Value, error) {
	fb := rewrite.Fallback(n)
	f := Lookup(fb.GetOpType(), b.Opset)
	if f == nil {
		return nil, NodeErr(fb, "not supported at opset %d", b.Opset)
	}
	return f(b, fb, in[:len(fb.Input)])
}

// nameNodes names each unnamed node of gp "#i", i its position, so that
// errors (and the model, when it is saved) can name it.
func nameNodes(gp *onnxpb.GraphProto) {
	for i, n := range gp.Node {
		if n.GetName() == "" {
			name := fmt.Sprintf("#%d", i)
			n.Name = &name
		}
	}
}

func markUnknown(n *onnxpb.NodeProto, unknown map[string]bool) {
	for _, o := range n.Output {
		if o != "" {
			unknown[o] = true
		}
	}
}
