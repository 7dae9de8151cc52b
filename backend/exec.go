package backend

import (
	"fmt"
	"reflect"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/importer"
)

// program executes the loss-and-gradient graph of a compiled model
// without a TapeMachine, so that one forward pass serves every task:
//
//   - the forward segment holds every needed node that does not depend on
//     the task weights u (the model, the losses, and any gradient factor
//     computed from forward values only); it runs once per Evaluate;
//   - the backward segment holds the nodes that depend on u; it runs once
//     per task with u = e_k, reading the held forward values. A backward
//     node that depends on no u_k with k = the task (the gradient of
//     another task's head, say) is not run: its value is exactly zero
//     under u = e_k, and a zero tensor held per node stands in for it.
//     (The only difference from running it: a non-finite local
//     derivative times u_j = 0 would have given NaN where ℓ_k does not
//     depend on it.)
//
// Every op runs through its Do on the calling goroutine. Do returns a
// fresh value and never writes into its inputs (Gorgonia's contract, and
// the contract of this package's kernels and of backend/ops), so the
// forward values held across the backward runs cannot be overwritten, and
// a backward run gives exactly the values a full forward-and-backward run
// with the same u gives: the same ops on the same inputs. (The
// TapeMachine, by contrast, reuses output buffers in place.)
//
// The one exception is deliberate: a float32 kernel node (kernelOp,
// kernelGradOp), Gorgonia's addition of two float32 tensors (add32), and
// an ops node whose op supports it (ops.fnOp.DoInto: Conv and its input
// gradient, MaxPool's gradient, BatchNorm), writes its result
// into the buffer of its own previous result (bufs, obufs), which that op
// allocated itself and which no other value shares. That value is dead when the node runs again: a backward node's
// previous result belongs to the previous task, whose gradients the
// caller has copied out, and is read only by nodes downstream of it,
// which either run again after it (reading the new value) or, not
// depending on the new task, are set to their zero first; a forward
// node's previous result belongs to the previous Evaluate, whose losses
// and gradients are copied out, and no forward value is read before it
// is recomputed. Values of other ops (which may return views of their
// inputs) are never reused.
type program struct {
	nodes []gnode   // every needed node, in execution order
	args  [][]int   // per node: positions of its children in nodes
	fwd   []int     // op nodes of the forward segment, in order
	bwd   []int     // op nodes of the backward segment, in order
	leafs []int     // input nodes (no op) other than u
	u     []int     // positions of the u nodes (-1 when not needed)
	deps  [][]bool  // per node: which u nodes it depends on
	zeros []G.Value // per node: its zero value, made on first use
	vals  []G.Value
	bufs  [][]float32 // per node: the float32 buffer of its last result, for reuse
	obufs []any       // per node: the backing data of its last ops.fnOp result, for reuse
	adds  []bool      // per node: Gorgonia's element-wise tensor addition (gradient sums)
	pos   map[gnode]int
}

// isGorgoniaAdd reports whether op is Gorgonia's element-wise addition,
// which symbolic differentiation uses to sum the gradients reaching a
// node. Recognised by its type and description; anything else (a future
// Gorgonia naming its ops otherwise included) just runs its Do.
func isGorgoniaAdd(op G.Op) bool {
	return op != nil && reflect.TypeOf(op).String() == "gorgonia.elemBinOp" && op.String() == "+ false"
}

// add32 adds two float32 tensors of equal shape into buf (reused when it
// has their length, like a kernel node's result), as Gorgonia's addition
// does (one float32 addition per element). ok is false for any other
// inputs: the caller then runs the op's Do.
func add32(buf []float32, a, b G.Value) (v G.Value, used []float32, ok bool) {
	x, ok1 := a.(*tensor.Dense)
	y, ok2 := b.(*tensor.Dense)
	if !ok1 || !ok2 || x.RequiresIterator() || y.RequiresIterator() || !x.Shape().Eq(y.Shape()) || len(x.Shape()) == 0 {
		return nil, nil, false
	}
	xd, ok1 := x.Data().([]float32)
	yd, ok2 := y.Data().([]float32)
	if !ok1 || !ok2 || len(xd) != len(yd) {
		return nil, nil, false
	}
	out := buf
	if len(out) != len(xd) {
		out = make([]float32, len(xd))
	}
	yd = yd[:len(xd)]
	out = out[:len(xd)]
	for i, v := range xd {
		out[i] = v + yd[i]
	}
	return tensor.New(tensor.WithShape(x.Shape().Clone()...), tensor.WithBacking(out)), out, true
}

// opsIntoOp is an ops op that can write its result into a given buffer
// (ops.fnOp.DoInto).
type opsIntoOp interface {
	DoInto(buf any, vals ...G.Value) (v G.Value, used any, err error)
}

// intoOp is an op that can write its result into a given float32 buffer
// (see kernelOp.doInto).
type intoOp interface {
	doInto(buf []float32, vals []G.Value) (v G.Value, used []float32, err error)
}

// newProgram plans the execution of the nodes needed for roots, with u the
// task-weight input nodes.
func newProgram(g *G.ExprGraph, roots G.Nodes, u []gnode) (*program, error) {
	sorted, err := G.Sort(g)
	if err != nil {
		return nil, fmt.Errorf("sorting the graph: %w", err)
	}
	children := func(n gnode) []gnode {
		it := g.From(n.ID())
		var out []gnode
		for it.Next() {
			out = append(out, it.Node().(*G.Node))
		}
		return out
	}
	needed := map[gnode]bool{}
	stack := append([]gnode{}, roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if needed[n] {
			continue
		}
		needed[n] = true
		stack = append(stack, children(n)...)
	}
	p := &program{pos: map[gnode]int{}}
	// G.Sort lists a node before its children: execute in reverse.
	for i := len(sorted) - 1; i >= 0; i-- {
		if n := sorted[i]; needed[n] {
			p.pos[n] = len(p.nodes)
			p.nodes = append(p.nodes, n)
		}
	}
	isU := map[gnode]bool{}
	for _, n := range u {
		isU[n] = true
	}
	dependsOnU := make([]bool, len(p.nodes))
	p.args = make([][]int, len(p.nodes))
	p.deps = make([][]bool, len(p.nodes))
	p.zeros = make([]G.Value, len(p.nodes))
	for i, n := range p.nodes {
		p.deps[i] = make([]bool, len(u))
		for k, un := range u {
			p.deps[i][k] = n == un
		}
		dependsOnU[i] = isU[n]
		for _, ch := range children(n) {
			j, ok := p.pos[ch]
			if !ok || j >= i {
				return nil, fmt.Errorf("node %v: child %v is not scheduled before it", n, ch)
			}
			p.args[i] = append(p.args[i], j)
			dependsOnU[i] = dependsOnU[i] || dependsOnU[j]
			for k := range u {
				p.deps[i][k] = p.deps[i][k] || p.deps[j][k]
			}
		}
		switch {
		case n.Op() == nil && !isU[n]:
			p.leafs = append(p.leafs, i)
		case n.Op() == nil:
		case dependsOnU[i]:
			p.bwd = append(p.bwd, i)
		default:
			p.fwd = append(p.fwd, i)
		}
	}
	for _, n := range u {
		if i, ok := p.pos[n]; ok {
			p.u = append(p.u, i)
		} else {
			p.u = append(p.u, -1)
		}
	}
	p.vals = make([]G.Value, len(p.nodes))
	p.bufs = make([][]float32, len(p.nodes))
	p.obufs = make([]any, len(p.nodes))
	p.adds = make([]bool, len(p.nodes))
	for i, n := range p.nodes {
		p.adds[i] = len(p.args[i]) == 2 && isGorgoniaAdd(n.Op())
	}
	return p, nil
}

// forward reads the bound values of the input nodes and runs the forward
// segment.
func (p *program) forward() error {
	for _, i := range p.leafs {
		v := p.nodes[i].Value()
		if v == nil {
			return fmt.Errorf("backend: input %v has no value", p.nodes[i])
		}
		p.vals[i] = v
	}
	return p.run(p.fwd)
}

// backward runs the backward segment for task k: u = e_k.
func (p *program) backward(k int, dt tensor.Dtype) error {
	for j, i := range p.u {
		if i >= 0 {
			v := 0.0
			if j == k {
				v = 1
			}
			p.vals[i] = scalarValue(dt, v)
		}
	}
	seg := make([]int, 0, len(p.bwd))
	for _, i := range p.bwd {
		if p.deps[i][k] {
			seg = append(seg, i)
			continue
		}
		if p.zeros[i] == nil {
			p.zeros[i] = zeroValue(p.nodes[i])
		}
		p.vals[i] = p.zeros[i]
	}
	return p.run(seg)
}

// zeroValue is a zero of n's type and shape.
func zeroValue(n gnode) G.Value {
	if n.IsScalar() {
		if n.Dtype() == tensor.Float32 {
			return G.NewF32(0)
		}
		return G.NewF64(0)
	}
	return tensor.New(tensor.Of(n.Dtype()), tensor.WithShape(n.Shape()...))
}

// value returns the current value of n, which must be a root or an
// ancestor of one.
func (p *program) value(n gnode) G.Value { return p.vals[p.pos[n]] }

// run executes the op nodes at the given positions, turning a panic into
// an error.
func (p *program) run(seg []int) (err error) {
	var cur gnode
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("backend: panic while running %v: %v", cur, r)
		}
	}()
	var in []G.Value
	for _, i := range seg {
		cur = p.nodes[i]
		in = in[:0]
		for _, j := range p.args[i] {
			in = append(in, p.vals[j])
		}
		var v G.Value
		var err error
		if p.adds[i] {
			if sum, used, ok := add32(p.bufs[i], in[0], in[1]); ok {
				p.vals[i], p.bufs[i] = sum, used
				continue
			}
		}
		switch op := cur.Op().(type) {
		case intoOp:
			var used []float32
			v, used, err = op.doInto(p.bufs[i], in)
			if used != nil {
				p.bufs[i] = used
			}
		case opsIntoOp:
			var used any
			v, used, err = op.DoInto(p.obufs[i], in...)
			if used != nil {
				p.obufs[i] = used
			}
		default:
			v, err = cur.Op().Do(in...)
		}
		if err != nil {
			return fmt.Errorf("backend: running %v: %w", cur, err)
		}
		p.vals[i] = v
	}
	return nil
}

// scalarValue is v as a Gorgonia scalar of dtype dt.
func scalarValue(dt tensor.Dtype, v float64) G.Value {
	if dt == tensor.Float32 {
		return G.NewF32(float32(v))
	}
	return G.NewF64(v)
}

// bind binds the values of an input node of shape s for the next program
// run: f32 when it is not nil, else t's values. In float32 mode the node
// keeps one tensor across calls and the values are copied into it; this
// is safe because no op writes into its inputs and the program's values
// are dead once Evaluate has copied its results out. Scalars and float64
// mode bind fresh values.
func (c *compiled) bind(n gnode, dt tensor.Dtype, s []int, f32 []float32, t *importer.Tensor) error {
	if dt != tensor.Float32 || len(s) == 0 {
		var d []float64
		if f32 != nil {
			d = make([]float64, len(f32))
			for i, v := range f32 {
				d[i] = float64(v)
			}
		} else {
			d = t.Float64s()
		}
		return letFloats(n, dt, s, d)
	}
	if c.bufs == nil {
		c.bufs = map[gnode]*tensor.Dense{}
	}
	buf, ok := c.bufs[n]
	if !ok || !equalShape(buf.Shape(), s) {
		buf = tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(s...))
		c.bufs[n] = buf
	}
	dst := buf.Data().([]float32)
	if f32 != nil {
		copy(dst, f32)
	} else {
		for i, v := range t.Float64s() {
			dst[i] = float32(v)
		}
	}
	return G.Let(n, buf)
}
