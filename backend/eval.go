package backend

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/loss"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
)

// addLosses appends the loss heads, one symbolic backward pass for
// Σ_i u_i·ℓ_i (u an input vector of task weights) and a sink node that
// copies losses and gradients into one fresh buffer (Gorgonia reuses
// buffers of dead values, so values are read only from the sink).
func (md *Model) addLosses(c *compiled, targets map[string][]int) error {
	b := c.bt.B
	for i, t := range md.tasks {
		h := loss.Lookup(t.Loss)
		out := c.bt.Vals[t.Output]
		var tg graph.Node
		if h.TargetShape != nil {
			want, err := h.TargetShape(out.Shape)
			if err != nil {
				return fmt.Errorf("%s %q: output %q: %v", md.kind(i), t.Name, t.Output, err)
			}
			if !shape.Equal(targets[t.Target], want) {
				return fmt.Errorf("%s %q: target array %q has shape %v, expected %v", md.kind(i), t.Name, t.Target, targets[t.Target], want)
			}
			tg = b.InputNode(fmt.Sprintf("target#%d:%s", i, t.Target), want)
		}
		l, err := h.Build(b, t.head(), out.N, tg)
		if err != nil {
			return fmt.Errorf("%s %q: %w", md.kind(i), t.Name, err)
		}
		c.targets = append(c.targets, tg)
		c.losses = append(c.losses, l)
		c.u = append(c.u, b.InputNode(fmt.Sprintf("u#%d", i), nil))
	}
	// Which parameters reach which losses through differentiable inputs.
	reach := make([]map[graph.Node]bool, len(c.losses))
	for i, l := range c.losses {
		reach[i] = diffAncestors(b.Graph, l)
	}
	var outs, gouts, wrt G.Nodes
	for i, l := range c.losses {
		has := false
		for _, p := range c.bt.Params {
			has = has || reach[i][p]
		}
		c.hasGrad = append(c.hasGrad, has)
		if has {
			outs, gouts = append(outs, l), append(gouts, c.u[i])
		}
	}
	for j, p := range md.params {
		n := c.bt.Params[p.Name]
		for i := range c.losses {
			if reach[i][n] {
				c.wrt = append(c.wrt, j)
				wrt = append(wrt, n)
				break
			}
		}
	}
	sinkIn := append(G.Nodes{}, c.losses...)
	if len(wrt) > 0 {
		grads, err := G.Backpropagate(outs, gouts, wrt)
		if err != nil {
			return fmt.Errorf("symbolic differentiation: %w", err)
		}
		sinkIn = append(sinkIn, grads...)
		c.grads = grads
	}
	var err error
	if c.sink, err = graph.ConcatSink(b, "sink", sinkIn); err != nil {
		return err
	}
	if c.lossOut, err = graph.ConcatSink(b, "losses", c.losses); err != nil {
		return err
	}
	roots := append(append(G.Nodes{}, c.losses...), c.grads...)
	if c.prog, err = newProgram(b.Graph, roots, c.u, md.run, md.stats); err != nil {
		return fmt.Errorf("planning execution: %w", err)
	}
	c.prog.pool = md.bufPool()
	c.prog.pool.fit(c.prog.plan.pooledPeak(c.prog))
	c.gradAt = gradPlaces(c)
	return nil
}

// diffAncestors returns the nodes from which root is reached through
// differentiable op inputs.
func diffAncestors(g *G.ExprGraph, root graph.Node) map[graph.Node]bool {
	seen := map[graph.Node]bool{root: true}
	stack := []graph.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		it := g.From(n.ID())
		var children []graph.Node
		for it.Next() {
			children = append(children, it.Node().(*G.Node))
		}
		var diffs []bool
		if op, ok := n.Op().(G.SDOp); ok && n.Op() != nil {
			diffs = op.DiffWRT(len(children))
		}
		for k, ch := range children {
			if diffs != nil && k < len(diffs) && !diffs[k] {
				continue
			}
			if !seen[ch] {
				seen[ch] = true
				stack = append(stack, ch)
			}
		}
	}
	return seen
}

// Evaluate computes the task losses on batch into losses and, when jac is
// not nil, the exact per-task gradients into jac (m×n, rows in task order,
// columns in Trainable order). The backward pass runs once per task with
// the task weights u = e_i (the forward pass is recomputed each time).
// Terms (Options.Terms) are computed by the forward pass but get no
// backward pass.
func (md *Model) Evaluate(batch map[string]*importer.Tensor, losses []float64, jac *png.Jacobian) error {
	return md.evaluate("Evaluate", batch, losses, nil, jac, nil)
}

// EvaluateTerms is Evaluate that also writes the term values
// (Options.Terms, in order) into terms and, when tjac is not nil, their
// exact gradients into tjac (t×n): one more backward pass per term. tjac
// needs jac; jac alone gives the task gradients and the term values.
func (md *Model) EvaluateTerms(batch map[string]*importer.Tensor, losses, terms []float64, jac, tjac *png.Jacobian) error {
	t := len(md.tasks) - md.ntasks
	if len(terms) != t {
		return fmt.Errorf("backend: EvaluateTerms: terms has length %d, expected %d terms", len(terms), t)
	}
	if jac == nil && tjac != nil {
		return fmt.Errorf("backend: EvaluateTerms: a term Jacobian needs the task Jacobian too")
	}
	return md.evaluate("EvaluateTerms", batch, losses, terms, jac, tjac)
}

// checkJacobian returns an error unless jac is rows×n for the model's n.
func (md *Model) checkJacobian(fn, what string, jac *png.Jacobian, rows int) error {
	if jac != nil && (jac.M != rows || jac.N != len(md.theta) || len(jac.Data) != rows*len(md.theta)) {
		return fmt.Errorf("backend: %s: %s Jacobian is %d×%d (%d values), expected %d×%d", fn, what, jac.M, jac.N, len(jac.Data), rows, len(md.theta))
	}
	return nil
}

// evaluate is Evaluate and EvaluateTerms: terms and tjac are nil for
// Evaluate.
func (md *Model) evaluate(fn string, batch map[string]*importer.Tensor, losses, terms []float64, jac, tjac *png.Jacobian) error {
	m := md.ntasks
	if len(losses) != m {
		return fmt.Errorf("backend: %s: losses has length %d, expected %d tasks", fn, len(losses), m)
	}
	if err := md.checkJacobian(fn, "task", jac, m); err != nil {
		return err
	}
	if err := md.checkJacobian(fn, "term", tjac, len(md.tasks)-m); err != nil {
		return err
	}
	if err := md.CheckBatch(batch); err != nil {
		return err
	}
	shapes, targets := map[string][]int{}, map[string][]int{}
	for _, in := range md.inputs {
		shapes[in.Name] = batch[in.Name].Shape
	}
	for _, t := range md.tasks {
		if t.Target != "" {
			targets[t.Target] = batch[t.Target].Shape
		}
	}
	ints, err := md.batchInts(batch)
	if err != nil {
		return fmt.Errorf("backend: %w", err)
	}
	c, err := md.compile(shapes, ints, targets)
	if err != nil {
		return fmt.Errorf("backend: %w", err)
	}
	bt := c.bt
	for _, p := range md.params {
		v := md.theta[p.Offset : p.Offset+shape.Numel(p.Shape)]
		if err := c.bindParam(bt.Params[p.Name], md.dt, p.Shape, v); err != nil {
			return fmt.Errorf("backend: parameter %q: %w", p.Name, err)
		}
	}
	for name, n := range bt.Inputs {
		a := batch[name]
		if err := c.bind(n, md.dt, a.Shape, a.F32, a); err != nil {
			return fmt.Errorf("backend: model input %q: %w", name, err)
		}
	}
	for i, t := range md.tasks {
		if c.targets[i] == nil {
			continue
		}
		a := batch[t.Target]
		if err := c.bind(c.targets[i], md.dt, a.Shape, a.F32, a); err != nil {
			return fmt.Errorf("backend: target array %q: %w", t.Target, err)
		}
	}
	start := time.Now()
	md.times = StepTimes{}
	defer func() { md.times.Backward = time.Since(start) - md.times.Forward }()
	if err := c.prog.forward(); err != nil {
		return fmt.Errorf("backend: forward pass: %w", err)
	}
	md.times.Forward = time.Since(start)
	all := make([]float64, len(c.losses))
	for i, l := range c.losses {
		d, err := graph.ValueFloats(c.prog.value(l))
		if err != nil {
			return fmt.Errorf("backend: reading losses: %w", err)
		}
		all[i] = d[0]
	}
	copy(losses, all[:m])
	if terms != nil {
		copy(terms, all[m:])
	} else {
		all = all[:m]
	}
	if err := md.checkLosses(all); err != nil {
		c.prog.release()
		return err
	}
	if jac == nil {
		c.prog.release()
		return nil
	}
	rowOf := func(k int) []float32 {
		if k < m {
			return jac.Row(k)
		}
		return tjac.Row(k - m)
	}
	var tasks []int
	for k := range all {
		if k >= m && tjac == nil {
			break
		}
		if c.hasGrad[k] {
			tasks = append(tasks, k)
		} else {
			clear(rowOf(k))
		}
	}
	gaps := md.gradGaps(c)
	if md.run.gradsIntoJacobian {
		c.prog.sinkOf = func(k, i int) []float32 {
			if j, ok := c.gradAt[i]; ok {
				p := md.params[j]
				return rowOf(k)[p.Offset : p.Offset+shape.Numel(p.Shape)]
			}
			return nil
		}
		defer func() { c.prog.sinkOf = nil }()
	}
	err = c.prog.eachPass(tasks, md.dt, func(k int, q *program) error {
		row := rowOf(k)
		for _, g := range gaps {
			clear(row[g[0]:g[1]])
		}
		for gi, j := range c.wrt {
			p := md.params[j]
			dst := row[p.Offset : p.Offset+shape.Numel(p.Shape)]
			if err := copyFloats32(dst, q.value(c.grads[gi])); err != nil {
				return fmt.Errorf("backend: reading the gradient of %q: %w", p.Name, err)
			}
		}
		return nil
	})
	if pe := (passError{}); errors.As(err, &pe) {
		return fmt.Errorf("backend: %s %q: backward pass: %w", md.kind(pe.k), md.tasks[pe.k].Name, pe.err)
	}
	if err != nil {
		return err
	}
	c.prog.release()
	return nil
}

// gradPlaces maps the position in c's program of each parameter
// gradient's node to the parameter (an index into md.params): backward
// nodes only, which every pass runs afresh.
func gradPlaces(c *compiled) map[int]int {
	at := make(map[int]int, len(c.wrt))
	for gi, j := range c.wrt {
		if i, ok := c.prog.pos[c.grads[gi]]; ok && slices.Contains(c.prog.bwd, i) {
			at[i] = j
		}
	}
	return at
}

// gradGaps lists the ranges [lo, hi) of a Jacobian row that no parameter
// gradient of c fills (parameters that no loss depends on): they are
// zeroed, and a pass's gradients overwrite the rest, so the rows are not
// cleared first (at 44 M parameters and three tasks, a 531 MB write).
func (md *Model) gradGaps(c *compiled) [][2]int {
	var filled [][2]int
	for _, j := range c.wrt {
		p := md.params[j]
		filled = append(filled, [2]int{p.Offset, p.Offset + shape.Numel(p.Shape)})
	}
	slices.SortFunc(filled, func(a, b [2]int) int { return a[0] - b[0] })
	var gaps [][2]int
	at := 0
	for _, f := range filled {
		if f[0] > at {
			gaps = append(gaps, [2]int{at, f[0]})
		}
		at = max(at, f[1])
	}
	if n := md.NumParams(); at < n {
		gaps = append(gaps, [2]int{at, n})
	}
	return gaps
}

// copyFloats32 copies the values of v (len(dst) of them) into dst,
// rounding float64 values to float32; long float32 ones on all cores.
func copyFloats32(dst []float32, v G.Value) error {
	if t, ok := v.(*tensor.Dense); ok && !t.RequiresIterator() {
		if d, ok := graph.Data32(t); ok {
			if len(d) != len(dst) {
				return fmt.Errorf("%d values, expected %d", len(d), len(dst))
			}
			if len(d) == 0 || &d[0] == &dst[0] { // written in place (execOptions.gradsIntoJacobian)
				return nil
			}
			parallel.Copy(dst, d)
			return nil
		}
	}
	d, err := graph.ValueFloats(v)
	if err != nil {
		return err
	}
	if len(d) != len(dst) {
		return fmt.Errorf("%d values, expected %d", len(d), len(dst))
	}
	for i, x := range d {
		dst[i] = float32(x)
	}
	return nil
}

// NonFiniteError reports a loss that is NaN or infinite.
type NonFiniteError struct {
	Task  string
	Value float64
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("backend: task %q: loss is %v", e.Task, e.Value)
}

// Is makes errors.Is(err, png.ErrNonFinite) true, so that the training loop
// treats a non-finite loss as a step to roll back rather than a failure.
func (e *NonFiniteError) Is(target error) bool { return target == png.ErrNonFinite }

func (md *Model) checkLosses(losses []float64) error {
	var errs []error
	for i, l := range losses {
		if math.IsNaN(l) || math.IsInf(l, 0) {
			errs = append(errs, &NonFiniteError{Task: md.tasks[i].Name, Value: l})
		}
	}
	return errors.Join(errs...)
}

// StepTimes is how the last Evaluate spent its time.
type StepTimes struct {
	Forward  time.Duration // the forward pass, losses read
	Backward time.Duration // the backward passes, gradients copied into J
}

// LastStep returns the times of the last Evaluate (or EvaluateTerms).
func (md *Model) LastStep() StepTimes { return md.times }
