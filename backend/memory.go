package backend

import (
	"fmt"
	"runtime"

	G "gorgonia.org/gorgonia"

	fgemm "github.com/paretonav/paretonav/backend/internal/gemm"
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/loss"
	"github.com/paretonav/paretonav/importer"
)

// MemoryEstimate is the memory one Evaluate (a forward pass and every
// task's backward pass) needs, planned from the graph before any of it is
// allocated. Sizes are in bytes.
type MemoryEstimate struct {
	// Values is the planned peak of the activations and gradients alive at
	// once: forward values kept for the backward passes plus the live
	// values of the largest pass.
	Values int64
	// Weights is the parameters: θ, which the decoded float32
	// initializers (Model.chooseParams) and every graph's parameter nodes
	// (Model.paramView, bindParam) are views of, and the values the
	// importer.Model still holds for them (none after ReleaseModelData).
	Weights int64
	// Jacobian is J (and the terms' rows), float32.
	Jacobian int64
	// Scratch is the convolutions' im2col bands, wide rows, padded inputs
	// and cache, and the transformed filters and tiles of the largest
	// Winograd convolution.
	Scratch int64
}

// Total is the sum of the parts.
func (e MemoryEstimate) Total() int64 { return e.Values + e.Weights + e.Jacobian + e.Scratch }

// String gives the total and its parts in GB.
func (e MemoryEstimate) String() string {
	return fmt.Sprintf("%s (%s)", FormatBytes(e.Total()), e.Parts())
}

// Parts lists the parts in GB.
func (e MemoryEstimate) Parts() string {
	return fmt.Sprintf("activations and gradients %s, weights %s, J %s, scratch %s",
		FormatBytes(e.Values), FormatBytes(e.Weights), FormatBytes(e.Jacobian), FormatBytes(e.Scratch))
}

// FormatBytes writes n bytes in GB (MB below 1 GB), decimal units.
func FormatBytes(n int64) string {
	if n < 1e9 {
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}

// EstimateMemory plans a step on a batch shaped like batch (its values are
// not read, except integer model inputs that fix shapes) and returns the
// memory it will need. The graph it builds is the one Evaluate uses for
// this shape.
func (md *Model) EstimateMemory(batch map[string]*importer.Tensor) (MemoryEstimate, error) {
	shapes, err := md.inputShapes(batch)
	if err != nil {
		return MemoryEstimate{}, err
	}
	ints, err := md.batchInts(batch)
	if err != nil {
		return MemoryEstimate{}, fmt.Errorf("backend: %w", err)
	}
	return md.estimate(shapes, ints)
}

// EstimateMemoryBatch is EstimateMemory for a batch of n examples: every
// input's first dimension, when dynamic, is n. Other dynamic dimensions
// and integer inputs that fix shapes need data (EstimateMemory).
func (md *Model) EstimateMemoryBatch(n int) (MemoryEstimate, error) {
	if n < 1 {
		return MemoryEstimate{}, fmt.Errorf("backend: batch %d: want at least 1", n)
	}
	shapes := map[string][]int{}
	for _, in := range md.inputs {
		if md.static[in.Name] {
			return MemoryEstimate{}, fmt.Errorf("backend: model input %q fixes shapes by its values: estimate on data", in.Name)
		}
		if in.Shape == nil {
			return MemoryEstimate{}, fmt.Errorf("backend: model input %q has no declared shape: estimate on data", in.Name)
		}
		s := make([]int, len(in.Shape))
		for i, d := range in.Shape {
			switch {
			case d >= 0:
				s[i] = d
			case i == 0:
				s[i] = n
			default:
				return MemoryEstimate{}, fmt.Errorf("backend: model input %q: dimension %d is dynamic: estimate on data", in.Name, i)
			}
		}
		shapes[in.Name] = s
	}
	return md.estimate(shapes, nil)
}

// estimate compiles the step for the given input shapes (targets shaped
// as the losses need) and sums the plan's parts.
func (md *Model) estimate(shapes map[string][]int, ints map[string]*importer.Tensor) (MemoryEstimate, error) {
	c, err := md.compileStep(shapes, ints)
	if err != nil {
		return MemoryEstimate{}, err
	}
	return md.estimateOf(c), nil
}

// compileStep compiles the step for the given input shapes, with targets
// shaped as the losses need.
func (md *Model) compileStep(shapes map[string][]int, ints map[string]*importer.Tensor) (*compiled, error) {
	if len(md.tasks) == 0 {
		return nil, fmt.Errorf("backend: no tasks: the model was opened for Outputs only")
	}
	c0, err := md.compile(shapes, ints, nil)
	if err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	targets := map[string][]int{}
	for i, t := range md.tasks {
		k := loss.Lookup(t.Loss)
		if k.TargetShape == nil {
			continue
		}
		out := c0.bt.Vals[t.Output]
		want, err := k.TargetShape(out.Shape)
		if err != nil {
			return nil, fmt.Errorf("backend: %s %q: output %q: %v", md.kind(i), t.Name, t.Output, err)
		}
		targets[t.Target] = want
	}
	c, err := md.compile(shapes, ints, targets)
	if err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	return c, nil
}

// estimateOf sums the parts of c's plan.
func (md *Model) estimateOf(c *compiled) MemoryEstimate {
	n := int64(len(md.theta))
	w := int64(runtime.GOMAXPROCS(0))
	return MemoryEstimate{
		Values:   c.prog.plan.peak(c.prog),
		Weights:  4*n + md.modelDataBytes(),
		Jacobian: int64(len(md.tasks)) * 4 * n,
		// an im2col band or wide rows per worker, and one shared buffer of
		// a convolution over the whole batch or a padded input chunk, each
		// at most the graph's largest band; the im2col matrices the
		// convolutions keep (at most ColCacheTotal); the largest Winograd
		// convolution's transformed filters and tiles; the products'
		// packing buffers
		Scratch: w*c.bt.B.ColBand + max(c.bt.B.ColBand, c.bt.B.ColBatch) + min(c.bt.B.ColCache, kernels.ColCacheTotal()) + c.bt.B.WinoScratch +
			fgemm.PackBytes(int(w)),
	}
}

// ForwardBytes is the planned peak, in bytes, of the pooled values of a
// forward pass that reads the tasks' outputs (Outputs, which the task
// metrics of tune's and eval's report passes run) on a batch shaped like
// batch. Its buffers come from the pool the step's live in, but are of
// other sizes, so the pool holds both.
func (md *Model) ForwardBytes(batch map[string]*importer.Tensor) (int64, error) {
	shapes, err := md.inputShapes(batch)
	if err != nil {
		return 0, err
	}
	ints, err := md.batchInts(batch)
	if err != nil {
		return 0, fmt.Errorf("backend: %w", err)
	}
	c, err := md.compile(shapes, ints, nil)
	if err != nil {
		return 0, fmt.Errorf("backend: %w", err)
	}
	var nodes G.Nodes
	for _, t := range md.tasks {
		if v := c.bt.Vals[t.Output]; v != nil && !v.IsConst() && !graph.IsIntNode(v) {
			nodes = append(nodes, v.N)
		}
	}
	if len(nodes) == 0 {
		return 0, nil
	}
	sink, err := graph.ConcatSink(c.bt.B, fmt.Sprintf("estimate%d", len(md.cache)), nodes)
	if err != nil {
		return 0, fmt.Errorf("backend: %w", err)
	}
	p, err := newProgram(c.bt.B.Graph, G.Nodes{sink}, nil, md.run, md.stats)
	if err != nil {
		return 0, fmt.Errorf("backend: %w", err)
	}
	return 4 * p.plan.pooledPeak(p), nil
}

// ReleaseModelData drops the values of the trainable initializers that
// the importer.Model given to Open holds in memory
// (importer.Model.ReleaseData): θ holds them. That saves one copy of the
// parameters (177 MB for the full MTAN). Afterwards that importer.Model
// can be saved only with Weights, and Open cannot be called on it again.
func (md *Model) ReleaseModelData() error {
	if err := md.m.ReleaseData(md.paramNames()); err != nil {
		return fmt.Errorf("backend: %w", err)
	}
	return nil
}

// modelDataBytes is what the importer.Model holds in memory for the
// trainable initializers' values.
func (md *Model) modelDataBytes() int64 { return md.m.InlineBytes(md.paramNames()) }

// paramNames lists the trainable initializers in θ's order.
func (md *Model) paramNames() []string {
	names := make([]string, len(md.params))
	for i, p := range md.params {
		names[i] = p.Name
	}
	return names
}
