package backend

import (
	"fmt"
	"reflect"
	"slices"
	"weak"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
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
//     under u = e_k, and a zero tensor stands in for it (all such zeros
//     share one read-only backing array). (The only difference from
//     running it: a non-finite local derivative times u_j = 0 would have
//     given NaN where ℓ_k does not depend on it.)
//
// Every op runs through its Do on the goroutine running its pass (the
// caller's; with small passes, several tasks' passes run side by side on
// forks of the program: concurrent.go), except that a float32 BatchNorm
// read only by a Relu runs fused with it (fuse.go). Do returns a
// fresh value and never writes into its inputs (Gorgonia's contract, and
// the contract of this package's kernels and of backend/internal/kernels), so a
// backward run gives exactly the values a full forward-and-backward run
// with the same u gives: the same ops on the same inputs.
//
// Memory is planned over the graph (plan.go): a forward value lives until
// its last use in the forward segment, or, when a backward node or the
// caller reads it, until release, unless it is cheap to recompute
// (Relu, Sigmoid, Mul, Concat, BatchNorm with running statistics:
// program.cheap) and the cheap values the backward passes read take at
// least execOptions.rematMinBytes, when each backward pass recomputes it just before
// its first reader; a backward value lives until its last
// use in its task's pass, a root until the pass ends. Where a value dies,
// the buffer it lives in returns to the program's pool when it is one of
// ours: the result of a float32 kernel node (graph.KernelOp, graph.KernelGradOp), of
// Gorgonia's addition of two float32 tensors (add32), or of a kernels node
// writing into a given buffer (kernels.fnOp.DoInto: Conv and its input
// gradient, pooling gradients, BatchNorm…). Those ops write a fresh
// result that shares no memory with their inputs, into a pool buffer of
// the result's length, zeroed first, so reuse is invisible in the values.
// Values of other ops (Gorgonia's, which may return views of their
// inputs) are never pooled, and keep every value they read alive as long
// as they live (plan.go's alias rule), so a view never outlives its data.
type program struct {
	nodes  []graph.Node // every needed node, in execution order
	args   [][]int      // per node: positions of its children in nodes
	fwd    []int        // op nodes of the forward segment, in order
	bwd    []int        // op nodes of the backward segment, in order
	leafs  []int        // input nodes (no op) other than u
	u      []int        // positions of the u nodes (-1 when not needed)
	deps   [][]bool     // per node: which u nodes it depends on
	zeros  []G.Value    // per node: its zero value, made on first use
	vals   []G.Value
	adds   []bool // per node: Gorgonia's element-wise tensor addition (gradient sums)
	pos    map[graph.Node]int
	roots  []bool  // per node: read by the caller after a pass
	shapes [][]int // per node: its shape (gorgonia's Node.Shape makes a copy per call)

	plan  *plan       // lifetimes: when each value dies (plan.go)
	owned [][]float32 // per node: the pool buffer its current value lives in, or nil
	pool  *bufPool    // dead buffers; shared by the programs of one Model
	zero  zeroBacking // the shared backing of zero values
	live  []int       // backward nodes holding a value from the last pass

	reluOf  []int  // per node: the BatchNorm a fused Relu takes its value from, or −1 (fuse.go)
	fusedBN []bool // per node: a BatchNorm that runs with the Relu reading it

	bnGrads   []*bnGradGroup // per node: a Relu gradient running its BatchNorm's gradients (fusegrad.go)
	made      []bool         // per node: its value was made by a fused Relu gradient in this pass
	pass      int            // the task whose backward pass runs
	dying     []int          // the values that die after the node running (run's frees)
	inForward bool           // the forward segment runs (forward)
	// sinkOf, when set, is where node i's float32 value goes in task k's
	// pass: a parameter gradient's place in the task's Jacobian row, which
	// the op then writes instead of a pool buffer (nil for other nodes).
	sinkOf func(k, i int) []float32
	// sinkWrap holds, per (task, node), the tensor that wrapped the node's
	// sink in the last pass: the op is offered it (graph.Value32's reuse), so
	// that a parameter gradient written into the same Jacobian row step
	// after step makes no tensor (a header, its shape and strides, four
	// objects per gradient per step). The pointers are weak: a caller
	// that drops its Jacobian between steps gets its memory back, the
	// tensor wrapping it being collected with it. Indexed [task][node],
	// made before the passes run (eachPass) and shared with the forks:
	// each task's row is written only by the goroutine running its pass.
	sinkWrap *[][]weak.Pointer[tensor.Dense]
	forks    []*program // the programs of eachPass's goroutines, kept across steps (concurrent.go)
	// into is the destination exec offers the kernels package's op running
	// (buf and the tensor that last wrapped it), empty between ops.
	into kernels.Into

	opt   *execOptions // the fast paths on (the Model's; shared with forks)
	stats *execStats   // what the fast paths did, for tests (the Model's; shared with forks)
}

// takeable reports whether node j's value dies with the node running and
// lives in a pool buffer of n values this program owns, which that node
// may then take over: not a root, and a value of the running backward pass
// (it depends on the pass's task weight; a forward value seen from a
// backward pass may be read by later passes), unless forward is set.
func (p *program) takeable(j, n int, forward bool) bool {
	return len(p.owned[j]) == n && !p.roots[j] && (forward || p.deps[j][p.pass]) && slices.Contains(p.dying, j)
}

// sumInto returns an operand of the gradient sum i whose value it may take
// over (takeable: dying here, in a pool buffer of n values, of the running
// backward pass). The sum is written over it (one float32 addition per
// element, as into a fresh buffer), which spares a buffer and the write
// into untouched memory. −1 when there is none.
func (p *program) sumInto(i, n int) int {
	for _, j := range p.args[i] {
		if p.takeable(j, n, false) {
			return j
		}
	}
	return -1
}

// takeCopied runs node i, a plain copy (graph.KernelOp.PlainCopy, forward, or
// its gradient, which copies the output's gradient back), without copying
// when the value it copies dies with it: the value of i is then that
// buffer under i's shape, and the dying value keeps no buffer to free. It
// applies to a value i may take over (takeable, in the forward pass too)
// whose tensor is backed by exactly that buffer. It reports whether it ran
// i.
func (p *program) takeCopied(i int, cur graph.Node, n int) bool {
	j := -1
	switch op := cur.Op().(type) {
	case *graph.KernelOp:
		if op.PlainCopy && len(p.args[i]) == 1 {
			j = p.args[i][0]
		}
	case *graph.KernelGradOp:
		if op.Of.PlainCopy && len(op.Of.Ins) == 1 && len(p.args[i]) == 3 {
			j = p.args[i][2] // the output's gradient
		}
	}
	if j < 0 || !p.takeable(j, n, p.inForward) {
		return false
	}
	x, ok := p.vals[j].(*tensor.Dense)
	if !ok || !graph.BackedBy(x, p.owned[j]) {
		return false
	}
	b := p.owned[j]
	p.owned[j] = nil // j's free then drops only its value
	p.vals[i], p.owned[i] = graph.Value32(nil, p.shapes[i], b), b
	p.stats.copiesTaken.Add(1)
	return true
}

// sumWithZero runs the gradient sum i when one of its operands in is the
// zero value of a node the running pass does not run (another task's
// head, say: in MTAN, 300 of the 358 sums of a step at 64×96 add the
// zero contributions of the other tasks' attention branches to the
// shared trunk's gradients). The sum is then the other operand, which it
// takes over (stolen) when that dies here and lives in a pool buffer of
// len(buf) values: the value and the buffer, no copy. Otherwise it copies
// it into buf, which is sink when sink is not nil. The values are those of the addition, except that 0 + (−0) gives
// +0 there and −0 here. ok is false when neither operand is such a zero
// or the operands are not float32 tensors of one shape: the caller adds.
func (p *program) sumWithZero(i int, buf, sink []float32, reuse *tensor.Dense, in []G.Value) (v G.Value, used []float32, stolen, ok bool) {
	o := -1 // the operand that is not a zero value
	for a, j := range p.args[i] {
		if p.zeros[j] != nil && p.vals[j] == p.zeros[j] {
			o = 1 - a
		}
	}
	if o < 0 || len(in) != 2 {
		return nil, nil, false, false
	}
	x, ok1 := in[o].(*tensor.Dense)
	z, ok2 := in[1-o].(*tensor.Dense)
	if !ok1 || !ok2 || x.RequiresIterator() || !x.Shape().Eq(z.Shape()) || len(x.Shape()) == 0 {
		return nil, nil, false, false
	}
	xd, ok := graph.Data32(x)
	if !ok || len(xd) != len(buf) {
		return nil, nil, false, false
	}
	p.stats.zeroSums.Add(1)
	j := p.args[i][o]
	if sink == nil && p.takeable(j, len(buf), false) {
		b := p.owned[j]
		p.owned[j] = nil // j's free then drops only its value
		return x, b, true, true
	}
	out := buf
	parallel.Copy(out, xd)
	return p.value32(reuse, x.Shape(), out), out, false, true
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
// does (one float32 addition per element), on all cores for long ones.
// buf may back a or b: each element is read before it is written. ok is
// false for any other inputs: the caller then runs the op's Do.
func (p *program) add32(buf []float32, reuse *tensor.Dense, a, b G.Value) (v G.Value, used []float32, ok bool) {
	x, ok1 := a.(*tensor.Dense)
	y, ok2 := b.(*tensor.Dense)
	if !ok1 || !ok2 || x.RequiresIterator() || y.RequiresIterator() || !x.Shape().Eq(y.Shape()) || len(x.Shape()) == 0 {
		return nil, nil, false
	}
	xd, ok1 := graph.Data32(x)
	yd, ok2 := graph.Data32(y)
	if !ok1 || !ok2 || len(xd) != len(yd) {
		return nil, nil, false
	}
	out := buf
	if len(out) != len(xd) {
		out = make([]float32, len(xd))
	}
	out = out[:len(xd)]
	parallel.ForElems(len(xd), parallel.Vec3{D: out, X: xd, Y: yd[:len(xd)]}, func(v parallel.Vec3, lo, hi int) {
		o, y := v.D[lo:hi], v.Y[lo:hi]
		for i, x := range v.X[lo:hi] {
			o[i] = x + y[i]
		}
	})
	return p.value32(reuse, x.Shape(), out), out, true
}

// opsIntoOp is a kernels op that can write its result into a given buffer
// (kernels.fnOp.DoInto).
type opsIntoOp interface {
	DoInto(buf any, vals ...G.Value) (v G.Value, used any, err error)
}

// intoOp is an op that can write its result into a given float32 buffer
// (see graph.KernelOp.DoInto32).
// reuse, when not nil, is a dead tensor that wrapped buf
// (bufPool.getDense): the op returns it instead of a new tensor when it
// is the result (graph.Value32).
type intoOp interface {
	DoInto32(buf []float32, reuse *tensor.Dense, vals []G.Value) (v G.Value, used []float32, err error)
}

// The ops of package graph write into given buffers and read only some
// operands: a change of their methods must not silently turn that off.
var (
	_ intoOp    = (*graph.KernelOp)(nil)
	_ intoOp    = (*graph.KernelGradOp)(nil)
	_ intoOp    = (*graph.IntKernelOp)(nil)
	_ argReader = (*graph.KernelGradOp)(nil)
)

// newProgram plans the execution of the nodes needed for roots, with u the
// task-weight input nodes, with the fast paths of opt, counting in stats.
func newProgram(g *G.ExprGraph, roots G.Nodes, u []graph.Node, opt *execOptions, stats *execStats) (*program, error) {
	sorted, err := G.Sort(g)
	if err != nil {
		return nil, fmt.Errorf("sorting the graph: %w", err)
	}
	children := func(n graph.Node) []graph.Node {
		it := g.From(n.ID())
		var out []graph.Node
		for it.Next() {
			out = append(out, it.Node().(*G.Node))
		}
		return out
	}
	needed := map[graph.Node]bool{}
	stack := append([]graph.Node{}, roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if needed[n] {
			continue
		}
		needed[n] = true
		stack = append(stack, children(n)...)
	}
	p := &program{pos: map[graph.Node]int{}, pool: &bufPool{}, opt: opt, stats: stats}
	// G.Sort lists a node before its children: execute in reverse.
	for i := len(sorted) - 1; i >= 0; i-- {
		if n := sorted[i]; needed[n] {
			p.pos[n] = len(p.nodes)
			p.nodes = append(p.nodes, n)
		}
	}
	isU := map[graph.Node]bool{}
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
	p.shapes = make([][]int, len(p.nodes))
	for i, n := range p.nodes {
		p.shapes[i] = n.Shape().Clone()
	}
	p.owned = make([][]float32, len(p.nodes))
	p.adds = make([]bool, len(p.nodes))
	p.roots = make([]bool, len(p.nodes))
	for i, n := range p.nodes {
		p.adds[i] = len(p.args[i]) == 2 && isGorgoniaAdd(n.Op())
	}
	for _, r := range roots {
		p.roots[p.pos[r]] = true
	}
	p.fuseRelus()
	p.plan = newPlan(p, len(u))
	p.fuseReluGrads()
	return p, nil
}

// forward reads the bound values of the input nodes and runs the forward
// segment. Values of the previous run are released first.
func (p *program) forward() error {
	p.release()
	for _, i := range p.leafs {
		v := p.nodes[i].Value()
		if v == nil {
			return fmt.Errorf("backend: input %v has no value", p.nodes[i])
		}
		p.vals[i] = v
	}
	p.inForward = true
	defer func() { p.inForward = false }()
	return p.run(p.fwd, p.plan.fwdFree)
}

// backward runs the backward segment for task k: u = e_k. The values of
// the previous task's pass are released first; the roots of this one stay
// readable until the next pass or release.
func (p *program) backward(k int, dt tensor.Dtype) error {
	p.endPass()
	p.pass = k
	for j, i := range p.u {
		if i >= 0 {
			v := 0.0
			if j == k {
				v = 1
			}
			p.vals[i] = scalarValue(dt, v)
		}
	}
	for _, i := range p.plan.zeroed[k] {
		if p.zeros[i] == nil {
			p.zeros[i] = p.zero.value(p.nodes[i], p.plan.zeroMax)
		}
		p.vals[i] = p.zeros[i]
	}
	seg := p.plan.segs[k]
	p.live = append(p.live[:0], seg...)
	return p.run(seg, p.plan.bwdFree[k])
}

// endPass releases the values of the last backward pass.
func (p *program) endPass() {
	for _, i := range p.live {
		p.free(i)
		p.made[i] = false
	}
	p.live = p.live[:0]
}

// release drops every value the program holds (forward and backward),
// returning its buffers to the pool. The inputs' bound values stay.
func (p *program) release() {
	p.endPass()
	for _, i := range p.fwd {
		p.free(i)
	}
	for _, i := range p.bwd {
		p.vals[i] = nil
	}
}

// free drops the value of node i, returning its buffer to the pool when it
// is one of ours.
func (p *program) free(i int) {
	if b := p.owned[i]; b != nil {
		p.pool.putDense(b, p.vals[i])
		p.owned[i] = nil
	}
	p.vals[i] = nil
}

// value returns the current value of n, which must be a root or an
// ancestor of one.
func (p *program) value(n graph.Node) G.Value { return p.vals[p.pos[n]] }

// run executes the op nodes at the given positions, turning a panic into
// an error; after seg[t] it frees the values listed in frees[t].
func (p *program) run(seg []int, frees [][]int) (err error) {
	var cur graph.Node
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("backend: panic while running %v: %v", cur, r)
		}
	}()
	var in []G.Value
	for t, i := range seg {
		cur = p.nodes[i]
		p.dying = frees[t]
		in = in[:0]
		for _, j := range p.args[i] {
			in = append(in, p.vals[j])
		}
		if err := p.exec(i, cur, in); err != nil {
			return fmt.Errorf("backend: running %v: %w", cur, err)
		}
		for _, j := range frees[t] {
			p.free(j)
		}
	}
	return nil
}

// exec runs node i on its input values in, writing into a pool buffer
// where the op supports it.
func (p *program) exec(i int, cur graph.Node, in []G.Value) error {
	if p.made[i] { // by its fused Relu gradient (fusegrad.go)
		p.made[i] = false
		return nil
	}
	if grp := p.bnGrads[i]; grp != nil {
		if done, err := p.execBNGrads(i, grp, in); done || err != nil {
			return err
		}
	}
	if b := p.reluOf[i]; b >= 0 {
		// The BatchNorm already applied this Relu: take over its value.
		p.vals[i], p.owned[i] = p.vals[b], p.owned[b]
		p.owned[b] = nil
		return nil
	}
	f32 := cur.Dtype() == tensor.Float32
	// buf is the pool buffer the op may write its value into, or sink, the
	// value's place in the Jacobian (sinkOf), which is never pooled.
	var buf, sink []float32
	var reuse *tensor.Dense // the tensor that last wrapped buf, if any (bufPool.getDense)
	offered := false        // the op was offered reuse (the sink's tensor: keepSinkWrap)
	if p.pooled(i) {
		n := p.poolLen(i)
		if p.sinkOf != nil && n > 0 {
			if s := p.sinkOf(p.pass, i); len(s) == n {
				sink = s
			}
		}
		buf = sink
		if sink == nil {
			buf, reuse = p.pool.getDense(n, p.shapes[i])
		} else {
			if w := p.sinkWrap; w != nil && p.pass < len(*w) {
				reuse = (*w)[p.pass][i].Value()
				defer p.keepSinkWrap(i, sink, reuse, &offered)
			}
		}
	}
	// keep records that the result lives in b (nil: not a buffer of
	// ours), returning buf to the pool when the op did not use it.
	keep := func(b []float32) {
		switch {
		case len(b) > 0 && sink != nil && &b[0] == &sink[0]:
			p.owned[i] = nil
			p.stats.sunkGrads.Add(1)
			return
		case sink != nil:
			buf = nil
		}
		if len(b) > 0 && len(buf) > 0 && &b[0] == &buf[0] {
			buf = nil
		} else if len(b) > 0 {
			p.pool.adopt(b)
		}
		p.owned[i] = b
		if buf != nil {
			p.putBuf(buf, reuse)
		}
	}
	if p.adds[i] && f32 && p.opt.skipZeroSums {
		offered = true
		if v, used, stolen, ok := p.sumWithZero(i, buf, sink, reuse, in); ok {
			if stolen {
				p.putBuf(buf, reuse)
				buf, reuse = used, nil
			}
			p.vals[i] = v
			keep(used)
			return nil
		}
	}
	if p.adds[i] && f32 {
		stolen := -1 // the operand whose buffer takes the sum
		if sink == nil && buf != nil && p.opt.sumInPlace {
			if j := p.sumInto(i, len(buf)); j >= 0 {
				p.putBuf(buf, reuse)
				buf, p.owned[j], stolen = p.owned[j], nil, j
				// the operand's tensor, dying here, wraps the buffer
				// the sum takes: the sum's value when shapes agree
				reuse, _ = p.vals[j].(*tensor.Dense)
				p.stats.inPlaceSums.Add(1)
			}
		}
		offered = true
		if sum, used, ok := p.add32(buf, reuse, in[0], in[1]); ok {
			p.vals[i] = sum
			keep(used)
			return nil
		}
		if stolen >= 0 {
			p.owned[stolen], buf, reuse = buf, nil, nil
		}
	}
	if sink == nil && len(buf) > 0 && f32 && p.opt.copyInPlace && p.takeCopied(i, cur, len(buf)) {
		p.putBuf(buf, reuse)
		return nil
	}
	var v G.Value
	var err error
	switch op := cur.Op().(type) {
	case intoOp:
		var used []float32
		offered = true
		r := p.offer(reuse)
		v, used, err = op.DoInto32(buf, r, in)
		p.countReuse(v, r)
		if used != nil && !f32 {
			p.stats.pooledIntKernels.Add(1)
		}
		keep(used)
	case opsIntoOp:
		if p.fusedBN[i] { // float32, with the Relu reading it (fuse.go)
			var used []float32
			var ok bool
			p.into = kernels.Into{Buf: buf, Wrap: p.offer(reuse)}
			v, used, ok, err = kernels.FuseReluInto(cur.Op(), &p.into, in...)
			p.into = kernels.Into{}
			if !ok && err == nil {
				err = fmt.Errorf("backend: %v has no fused Relu", cur)
			}
			keep(used)
			break
		}
		var b any
		if f32 || cur.Dtype() == tensor.Int64 {
			// an int64 value takes a buffer of two float32 per element;
			// p.into, not buf itself: a slice in an interface is a heap
			// object per op run
			p.into = kernels.Into{Buf: buf, Wrap: p.offer(reuse)}
			b = &p.into
		}
		var used any
		v, used, err = op.DoInto(b, in...)
		p.into = kernels.Into{}
		var u32 []float32
		switch u := used.(type) {
		case []float32:
			u32 = u
		case *kernels.Into:
			u32 = buf
		}
		if u32 != nil && !f32 {
			p.stats.pooledInts.Add(1)
		}
		if f32 && err == nil {
			offered = true
			v = p.takeReuse(v, reuse, buf)
		}
		keep(u32)
	default:
		keep(nil)
		v, err = cur.Op().Do(in...)
	}
	if err != nil {
		return err
	}
	p.vals[i] = v
	return nil
}

// keepSinkWrap records node i's value in sinkWrap when it is a float32
// tensor backed by sink, the node's place in the pass's Jacobian row, and
// not already there (was: the tensor offered, *offered: whether the op
// that ran was offered it; the kernels package's ops make their own tensors).
func (p *program) keepSinkWrap(i int, sink []float32, was *tensor.Dense, offered *bool) {
	t, ok := p.vals[i].(*tensor.Dense)
	if !ok || !*offered {
		return
	}
	if !graph.BackedBy(t, sink) {
		return
	}
	p.stats.sinkTensorsOffered.Add(1)
	if t == was {
		p.stats.sinkTensorsReused.Add(1)
		return
	}
	(*p.sinkWrap)[p.pass][i] = weak.Make(t)
}

// value32 is graph.Value32 offered reuse when tensors are reused
// (execOptions.reuseTensors).
func (p *program) value32(reuse *tensor.Dense, s []int, data []float32) G.Value {
	r := p.offer(reuse)
	v := graph.Value32(r, s, data)
	p.countReuse(v, r)
	return v
}

// countReuse counts v when it is r, the tensor its op was offered.
func (p *program) countReuse(v G.Value, r *tensor.Dense) {
	if t, ok := v.(*tensor.Dense); ok && r != nil && t == r {
		p.stats.reusedTensors.Add(1)
	}
}

// offer is reuse when tensors are reused (execOptions.reuseTensors), else
// nil.
func (p *program) offer(reuse *tensor.Dense) *tensor.Dense {
	if !p.opt.reuseTensors {
		return nil
	}
	return reuse
}

// putBuf returns buf, which the running op did not keep, to the pool
// with reuse, the dead tensor that wrapped it (if any, and if it does):
// the next op given buf is offered it again.
func (p *program) putBuf(buf []float32, reuse *tensor.Dense) {
	if reuse != nil && graph.BackedBy(reuse, buf) {
		p.pool.putDense(buf, reuse)
		return
	}
	p.pool.put(buf)
}

// takeReuse returns reuse, the tensor that last wrapped buf, in place of
// v, a tensor the kernels package's kernel made around buf, when the two
// have the same shape (as graph.Value32 does for the backend's kernels), and
// gives v's header back to Gorgonia's tensor pool, where the next
// tensor.New takes it instead of allocating one: the header, its shape
// and its strides were a third of the bytes a small model's step
// allocated. v is fresh (its kernel made it around the buffer it was
// given and kept no reference), so nothing else reads it. An op offered
// reuse (kernels.Into) returns it itself when it fits: v is then reuse.
func (p *program) takeReuse(v G.Value, reuse *tensor.Dense, buf []float32) G.Value {
	t, ok := v.(*tensor.Dense)
	if ok && p.opt.reuseTensors && t != nil && t == reuse { // the op returned it (kernels.Into)
		p.stats.reusedTensors.Add(1)
		p.stats.opsTensorsReused.Add(1)
		return v
	}
	if !ok || !p.opt.reuseTensors || reuse == nil || t.RequiresIterator() || reuse.RequiresIterator() {
		return v
	}
	if !graph.BackedBy(t, buf) || !graph.BackedBy(reuse, buf) || !reuse.Shape().Eq(t.Shape()) {
		return v
	}
	p.stats.reusedTensors.Add(1)
	p.stats.opsTensorsReused.Add(1)
	return reuse
}

// pooled reports whether node i's value lives in a pool buffer: a
// float32 result of an op writing into a given buffer (intoOp, opsIntoOp)
// or of a gradient sum (add32), or, with execOptions.poolInts, an int64 result of an
// kernels op writing into a given buffer (MaxPool's indices: fresh memory for
// them cost 50 ms of the full MTAN's step at 64×96, in page faults) or of
// an integer kernel (graph.IntKernelOp: the indices' moves and arithmetic).
func (p *program) pooled(i int) bool {
	switch p.nodes[i].Dtype() {
	case tensor.Float32:
	case tensor.Int64:
		switch p.nodes[i].Op().(type) {
		case opsIntoOp, *graph.IntKernelOp:
			return p.opt.poolInts
		}
		return false
	default:
		return false
	}
	switch p.nodes[i].Op().(type) {
	case intoOp, opsIntoOp:
		return true
	}
	return p.adds[i]
}

// poolLen is the length of the pool buffer node i's value takes: one
// float32 per element, two for an int64 one.
func (p *program) poolLen(i int) int {
	n := shape.Numel(p.shapes[i])
	if p.nodes[i].Dtype() == tensor.Int64 {
		return 2 * n
	}
	return n
}

// scalarValue is v as a Gorgonia scalar of dtype dt.
func scalarValue(dt tensor.Dtype, v float64) G.Value {
	if dt == tensor.Float32 {
		return G.NewF32(float32(v))
	}
	return G.NewF64(v)
}
