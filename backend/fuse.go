package backend

import (
	"strings"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"gorgonia.org/tensor"
)

// Relu fused into the BatchNormalization before it: where a float32
// BatchNorm with running statistics (MTAN's every convolution block) is
// read by one Relu and by nothing else, and is not a root, the executor
// runs the BatchNorm as max(BatchNorm(x), 0) in one pass
// (ops.FuseReluInto) and the Relu as a no-op that takes over the
// BatchNorm's value and buffer. The values are the same bits as the two
// ops' (the same float32 affine map, then Go's max(v, 0) as reluFwd32);
// the tensor between them is never written, nor read back. The gradients
// are unchanged: the Relu's reads only its output, BatchNorm's its input.

// fuseRelus marks the fusable BatchNorm → Relu pairs of p: p.reluOf[j] is
// the BatchNorm node a Relu node j takes its value from, −1 elsewhere, and
// p.fusedBN[i] reports a BatchNorm node i that runs with its Relu.
func (p *program) fuseRelus() {
	p.reluOf = make([]int, len(p.nodes))
	p.fusedBN = make([]bool, len(p.nodes))
	readers := make([]int, len(p.nodes))
	for i := range p.nodes {
		p.reluOf[i] = -1
		for a, j := range p.args[i] {
			if p.reads(i, a) {
				readers[j]++
			}
		}
	}
	if !p.opt.fuseBatchNormRelu {
		return
	}
	for j, n := range p.nodes {
		op, ok := n.Op().(*graph.KernelOp)
		if !ok || op.Kind != "Relu" || len(p.args[j]) != 1 || n.Dtype() != tensor.Float32 {
			continue
		}
		i := p.args[j][0]
		bn := p.nodes[i]
		if readers[i] != 1 || p.roots[i] || p.fusedBN[i] || bn.Op() == nil || bn.Dtype() != tensor.Float32 ||
			!strings.HasPrefix(bn.Op().String(), "BatchNormEval{") {
			continue
		}
		p.reluOf[j] = i
		p.fusedBN[i] = true
	}
}
