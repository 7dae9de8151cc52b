package backend

import (
	"fmt"
	"runtime"
	"time"

	fgemm "github.com/paretonav/paretonav/backend/internal/gemm"
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/importer"
)

// StepFLOPs is the floating-point work of one Evaluate (the forward pass
// and every task's backward pass), counted from the planned step's graph:
// the products of its convolutions (Conv, ConvTranspose, the fused
// pointwise ConvConcat), Gemm and MatMul nodes, two operations per
// multiply-add, over the nodes each pass runs (an input gradient nothing
// needs, such as the first convolution's, is not run and not counted).
// Element-wise work is not counted.
type StepFLOPs struct {
	// Direct counts every convolution as a direct convolution with every
	// kernel tap, 2·N·M·(C/group)·kH·kW·oH·oW a pass, and every matrix
	// product as 2·m·n·k: the usual count, comparable across frameworks.
	Direct int64 `json:"direct"`
	// Executed is what the kernels run: a 3×3 convolution that runs as
	// Winograd F(2×2, 3×3) does 16 products of M×C by C×tiles (2.25×
	// fewer multiplications), and the taps of a convolution that read only
	// padding are dropped.
	Executed int64 `json:"executed"`
	// Forward is Direct's forward pass.
	Forward int64 `json:"forward"`
	// Winograd is the part of Direct done by convolutions that run as
	// Winograd.
	Winograd int64 `json:"winograd"`
}

// StepFLOPs counts the floating-point work of one Evaluate on a batch
// shaped like batch (its values are not read, except integer model
// inputs that fix shapes), from the graph Evaluate runs for this shape.
func (md *Model) StepFLOPs(batch map[string]*importer.Tensor) (StepFLOPs, error) {
	shapes, err := md.inputShapes(batch)
	if err != nil {
		return StepFLOPs{}, err
	}
	ints, err := md.batchInts(batch)
	if err != nil {
		return StepFLOPs{}, fmt.Errorf("backend: %w", err)
	}
	c, err := md.compileStep(shapes, ints)
	if err != nil {
		return StepFLOPs{}, err
	}
	return c.prog.flops(), nil
}

// flops sums the work of the forward segment's nodes and of every
// backward pass's.
func (p *program) flops() StepFLOPs {
	var f StepFLOPs
	add := func(i int, forward bool) {
		op := p.nodes[i].Op()
		if op == nil {
			return
		}
		d, e, ok := kernels.OpFLOPs(op)
		if !ok {
			if d, ok = graph.OpFLOPs(op); !ok {
				return
			}
			e = d
		}
		f.Direct += d
		f.Executed += e
		if forward {
			f.Forward += d
		}
		if kernels.OpWinograd(op) {
			f.Winograd += d
		}
	}
	for _, i := range p.fwd {
		add(i, true)
	}
	for _, seg := range p.plan.segs {
		for _, i := range seg {
			add(i, false)
		}
	}
	return f
}

// PeakGEMM measures the rate, in floating-point operations per second, of
// the float32 matrix product the step's kernels use on square matrices
// of size n, on every worker (GOMAXPROCS): the best of reps products,
// after one untimed. It is the machine's practical peak for the step's
// FLOPs (StepFLOPs) to be compared with.
func PeakGEMM(n, reps int) float64 {
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = float32(i%7)*0.25-0.75, float32(i%5)*0.5-1
	}
	w := runtime.GOMAXPROCS(0)
	best := time.Duration(0)
	for r := 0; r <= reps; r++ {
		t0 := time.Now()
		fgemm.SgemmParallel(w, false, false, n, n, n, 1, a, n, b, n, 0, c, n)
		if d := time.Since(t0); r > 0 && (best == 0 || d < best) {
			best = d
		}
	}
	return 2 * float64(n) * float64(n) * float64(n) / best.Seconds()
}
