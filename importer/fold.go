package importer

import (
	"errors"
	"fmt"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Folded is a model's main graph after constant folding (Fold).
type Folded struct {
	// Constants holds every value known at import: the outputs of folded
	// nodes and the non-floating-point initializers that no graph input
	// can override. Floating-point initializers are weights, which may be
	// trained, and are never folded into anything.
	Constants map[string]*Tensor
	// Nodes are the nodes left to run, in the graph's order.
	Nodes []*onnxpb.NodeProto
	// FoldedNodes are the nodes evaluated at import, in the graph's order.
	FoldedNodes []*onnxpb.NodeProto
}

// Fold evaluates, with EvalNode, every node of m's main graph whose inputs
// are all constants: Constant nodes and chains of constant-only nodes.
// Shape and Size nodes fold when their input's shape is fixed (a constant
// or an initializer); Shape of a graph input or of a computed value is
// left to the backend, which calls EvalNode with concrete shapes, so that
// dimensions such as the batch size stay dynamic. A node EvalNode does not
// support is left in place; a constant node that fails to evaluate is an
// error naming it. m is not modified.
func Fold(m *Model) (*Folded, error) {
	g := m.Proto.GetGraph()
	opset := m.Opset("")
	f := &Folded{Constants: map[string]*Tensor{}}
	overridable := map[string]bool{}
	if m.Proto.GetIrVersion() >= 4 {
		for _, in := range g.Input {
			overridable[in.GetName()] = true
		}
	}
	shapes := map[string][]int{} // values whose shape (only) is fixed
	for _, tp := range g.Initializer {
		shape, _, err := tensorShape(tp)
		if err != nil {
			return nil, fmt.Errorf("importer: initializer %q: %w", tp.GetName(), err)
		}
		if overridable[tp.GetName()] {
			continue
		}
		shapes[tp.GetName()] = shape
		if storageFor(DataType(tp.GetDataType())) != 'i' {
			continue
		}
		t, err := m.Initializer(tp)
		if err != nil {
			return nil, fmt.Errorf("importer: %w", err)
		}
		f.Constants[tp.GetName()] = t
	}
	for i, n := range g.Node {
		inputs, ok := foldInputs(n, f.Constants, shapes)
		if !ok || hasSubgraph(n) {
			f.Nodes = append(f.Nodes, n)
			continue
		}
		outs, err := EvalNode(n, opset, inputs)
		if errors.Is(err, ErrUnsupported) {
			f.Nodes = append(f.Nodes, n)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("importer: folding %s: %w", nodeWhere("", i, n), err)
		}
		for j, t := range outs {
			if j < len(n.Output) && n.Output[j] != "" {
				f.Constants[n.Output[j]] = t
				shapes[n.Output[j]] = t.Shape
			}
		}
		f.FoldedNodes = append(f.FoldedNodes, n)
	}
	return f, nil
}

// foldInputs gathers n's inputs if all are known at import.
func foldInputs(n *onnxpb.NodeProto, consts map[string]*Tensor, shapes map[string][]int) ([]*Tensor, bool) {
	if normDomain(n.GetDomain()) != "" || !Evaluable[n.GetOpType()] {
		return nil, false
	}
	inputs := make([]*Tensor, len(n.Input))
	shapeOnly := n.GetOpType() == "Shape" || n.GetOpType() == "Size"
	for i, name := range n.Input {
		if name == "" {
			continue
		}
		if t, ok := consts[name]; ok {
			inputs[i] = t
			continue
		}
		if s, ok := shapes[name]; ok && shapeOnly {
			inputs[i] = &Tensor{Name: name, Shape: s}
			continue
		}
		return nil, false
	}
	return inputs, true
}

func hasSubgraph(n *onnxpb.NodeProto) bool {
	for _, a := range n.Attribute {
		if a.G != nil || len(a.Graphs) > 0 {
			return true
		}
	}
	return false
}
