package backend

import (
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/shape"
)

// The backward side of a BatchNorm fused with its Relu (fuse.go): the
// Relu's gradient node computes g = gy·[y > 0] and the BatchNorm's
// gradient nodes for X, scale and B each read g. Where those are g's
// only readers, the executor runs them all when it reaches the Relu's
// gradient node, in one pass over gy and X that never writes g (the
// factor [y > 0] recomputed from X: kernels.BatchNormReluGrads): the same
// bits, less than half the memory traffic. The BatchNorm's gradient nodes
// then find their values made and do nothing. Their values are made a few
// nodes earlier than planned, while g, which the plan counts alive until
// its last reader, is never allocated, so the planned peak still bounds
// the pass.

// bnGradGroup is a Relu gradient node's fused BatchNorm gradients.
type bnGradGroup struct {
	bn    int       // the BatchNorm node
	op    G.Op      // its op
	grads [3]int    // the gradient nodes of X, scale and B (−1: none)
	in    [][3]bool // per task's pass: which of grads run in it
}

// fuseReluGrads finds the Relu gradient nodes of fused BatchNorm → Relu
// pairs whose readers are only the BatchNorm's gradient nodes of X, scale
// and B, and records which of those run in each task's pass. It runs after
// fuseRelus and the plan.
func (p *program) fuseReluGrads() {
	p.bnGrads = make([]*bnGradGroup, len(p.nodes))
	p.made = make([]bool, len(p.nodes))
	if !p.opt.fuseBatchNormRelu {
		return
	}
	readers := make([][]int, len(p.nodes))
	for i := range p.nodes {
		for _, j := range p.args[i] {
			readers[j] = append(readers[j], i)
		}
	}
	for r, n := range p.nodes {
		gop, ok := n.Op().(*graph.KernelGradOp)
		if !ok || gop.Of.Kind != "Relu" || len(p.args[r]) != 3 || p.roots[r] || n.Dtype() != tensor.Float32 {
			continue
		}
		j := p.args[r][1] // the Relu, whose output the gradient reads
		if p.reluOf[j] < 0 {
			continue
		}
		bn := p.reluOf[j]
		grp := &bnGradGroup{bn: bn, op: p.nodes[bn].Op(), grads: [3]int{-1, -1, -1}}
		fused := len(readers[r]) > 0
		for _, d := range readers[r] {
			op, k, ok := kernels.BatchNormReluGradOf(p.nodes[d].Op())
			if !ok || op != grp.op || grp.grads[k] >= 0 || !p.readsAs(d, r, bn, k) {
				fused = false
				break
			}
			grp.grads[k] = d
		}
		if !fused {
			continue
		}
		grp.in = make([][3]bool, len(p.plan.segs))
		for k, seg := range p.plan.segs {
			for g, d := range grp.grads {
				grp.in[k][g] = d >= 0 && slices.Contains(seg, d)
			}
		}
		p.bnGrads[r] = grp
	}
}

// readsAs reports whether gradient node d of input k of BatchNorm node bn
// reads the Relu gradient r in the place BatchNorm's gradient specs give
// it (X: scale, var, g; scale: X, g, mean, var; B: g), and its other
// operands are the BatchNorm's.
func (p *program) readsAs(d, r, bn, k int) bool {
	bnArgs := p.args[bn]
	var want []int
	switch k {
	case 0:
		want = []int{bnArgs[1], bnArgs[4], r}
	case 1:
		want = []int{bnArgs[0], r, bnArgs[3], bnArgs[4]}
	default:
		want = []int{r}
	}
	return slices.Equal(p.args[d], want)
}

// execBNGrads runs the fused gradients of group grp at its Relu gradient
// node r in task k's pass (in: r's operands, the Relu's input and output
// and gy). It reports false, doing nothing, when one of the BatchNorm's
// operands has no value (a recomputed forward value not made yet): r then
// runs as it is.
func (p *program) execBNGrads(r int, grp *bnGradGroup, in []G.Value) (bool, error) {
	want := grp.in[p.pass]
	if !want[0] && !want[1] && !want[2] {
		return false, nil
	}
	bnArgs := p.args[grp.bn]
	vals := make([]G.Value, 5)
	for i, j := range bnArgs {
		if vals[i] = p.vals[j]; vals[i] == nil {
			return false, nil
		}
	}
	var dx []float32
	if want[0] {
		dx = p.pool.get(shape.Numel(p.shapes[grp.grads[0]]))
	}
	gx, gs, gb, err := kernels.BatchNormReluGrads(grp.op, vals, in[2], dx, want[1], want[2])
	if err != nil {
		if dx != nil {
			p.pool.put(dx)
		}
		return true, err
	}
	for g, v := range []G.Value{gx, gs, gb} {
		if want[g] {
			d := grp.grads[g]
			p.vals[d], p.made[d] = v, true
		}
	}
	if want[0] {
		p.owned[grp.grads[0]] = dx
	}
	p.vals[r] = nil
	p.stats.fusedGradRuns.Add(1)
	return true, nil
}
