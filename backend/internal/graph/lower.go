package graph

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

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
