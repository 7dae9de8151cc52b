package backend

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
type builder struct {
	g     *G.ExprGraph
	dt    tensor.Dtype // element type of every float node (Float32 or Float64)
	opset int64        // default-domain opset of the model
	// bnTrain: BatchNormalization uses batch statistics (Options.BatchNorm
	// "train") instead of its running statistics.
	bnTrain bool
	consts  map[*importer.Tensor]gnode
	nconst  int
	// deferred names integer model inputs whose values are not known
	// (Open's trial build): nodes depending on them are not lowered.
	deferred []string
	// winoScratch is the most scratch memory, in bytes, that a pass of
	// one of the graph's Winograd convolutions takes beyond the im2col
	// bands (ops.WinogradScratchBytes).
	winoScratch int64
	// colBand is the largest im2col band of the graph's convolutions,
	// colBatch the largest batched im2col matrix and colCache the im2col
	// matrices they keep, in bytes (ops.ColScratchBytes).
	colBand, colBatch, colCache int64
}

func newBuilder(dt tensor.Dtype, opset int64) *builder {
	return &builder{g: G.NewGraph(), dt: dt, opset: opset, consts: map[*importer.Tensor]gnode{}}
}

// node returns v as a Gorgonia node, turning a constant into a
// non-trainable input node holding its values (as floats of b.dt).
func (b *builder) node(v *value) gnode {
	if v.n != nil {
		return v.n
	}
	if n, ok := b.consts[v.c]; ok {
		return n
	}
	b.nconst++
	name := fmt.Sprintf("const#%d:%s", b.nconst, v.c.Name)
	val := makeValue(b.dt, v.c.Shape, v.c.Float64s())
	var n gnode
	if len(v.c.Shape) == 0 {
		n = G.NewScalar(b.g, b.dt, G.WithName(name), G.WithValue(val))
	} else {
		n = G.NewTensor(b.g, b.dt, len(v.c.Shape), G.WithShape(v.c.Shape...), G.WithName(name), G.WithValue(val))
	}
	b.consts[v.c] = n
	return n
}

// input adds a run-time input node (a model input, a loss target, a
// parameter) of shape s.
func (b *builder) input(name string, s []int) gnode {
	if len(s) == 0 {
		return G.NewScalar(b.g, b.dt, G.WithName(name))
	}
	return G.NewTensor(b.g, b.dt, len(s), G.WithShape(s...), G.WithName(name))
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
func (b *builder) lowerGraph(gp *onnxpb.GraphProto, vals map[string]*value) error {
	var unsupported []UnsupportedOp
	var errs []error
	unknown := map[string]bool{} // outputs of nodes that failed
	for _, d := range b.deferred {
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
		f := lookup(n.GetOpType(), b.opset)
		if rewrite.Fused(n) {
			f = fusedLowerings[n.GetOpType()]
		}
		in := make([]*value, len(n.Input))
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
				errs = append(errs, nodeErr(n, "input %d %q is not produced by any earlier node, graph input or initializer", j, s))
				blocked = true
				continue
			}
			in[j] = v
			allConst = allConst && v.isConst()
		}
		if !blocked {
			if err := checkSeqInputs(n, in); err != nil {
				errs = append(errs, err)
				blocked = true
			}
		}
		if blocked {
			if f == nil {
				unsupported = append(unsupported, UnsupportedOp{n.GetOpType(), "", name, b.opset})
			}
			markUnknown(n, unknown)
			continue
		}
		if rewrite.Fused(n) && allConst {
			// known when the graph is built: fold the node it replaced
			n = rewrite.Fallback(n)
			in = in[:len(n.Input)]
			f = lookup(n.GetOpType(), b.opset)
		}
		var outs []*value
		if allConst && !noFold[n.GetOpType()] {
			cin := make([]*importer.Tensor, len(in))
			for j, v := range in {
				if v != nil {
					cin[j] = v.c
				}
			}
			// importer.EvalNode evaluates a node whose inputs are all
			// constants; lowerings handle constants themselves where shape
			// arithmetic needs it, so a failure here only means "lower it
			// instead".
			if ts, err := importer.EvalNode(n, b.opset, cin); err == nil {
				for _, t := range ts {
					outs = append(outs, constValue(t))
				}
			}
		}
		if outs == nil {
			if f == nil {
				unsupported = append(unsupported, UnsupportedOp{n.GetOpType(), "", name, b.opset})
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
func (b *builder) lowerNode(f lowerFunc, n *onnxpb.NodeProto, in []*value) (outs []*value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = nodeErr(n, "panic while lowering (opset %d): %v", b.opset, r)
		}
	}()
	outs, err = f(b, n, in)
	if err != nil {
		if !strings.Contains(err.Error(), fmt.Sprintf("node %q", n.GetName())) {
			err = nodeErr(n, "%v", err)
		}
		return nil, err
	}
	return outs, nil
}

// children returns the nodes n reads.
func (b *builder) children(n gnode) []gnode {
	it := b.g.From(n.ID())
	var out []gnode
	for it.Next() {
		out = append(out, it.Node().(*G.Node))
	}
	return out
}

// kindOf is the kind of the kernel computing n ("Relu", "Concat", ...),
// or "" when a kernel does not.
func kindOf(n gnode) string {
	if n == nil {
		return ""
	}
	if op, ok := n.Op().(*kernelOp); ok {
		return op.kind
	}
	return ""
}

// plainCopyOf returns the node whose values n holds under another shape
// (a Reshape's kernel, kernelOp.plainCopy), or nil.
func (b *builder) plainCopyOf(n gnode) gnode {
	if n == nil {
		return nil
	}
	if op, ok := n.Op().(*kernelOp); ok && op.plainCopy {
		if ch := b.children(n); len(ch) == 1 {
			return ch[0]
		}
	}
	return nil
}

// lowerFallback lowers the node that the fused node n replaced
// (rewrite.Fallback), reading the first of in: what a fused node's
// lowering does where the fusion does not apply.
func (b *builder) lowerFallback(n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	fb := rewrite.Fallback(n)
	f := lookup(fb.GetOpType(), b.opset)
	if f == nil {
		return nil, nodeErr(fb, "not supported at opset %d", b.opset)
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
