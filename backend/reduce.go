package backend

import (
	"math"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// ReduceMean, ReduceSum, ReduceL2. Axes are an attribute until they become
// an optional input (ReduceSum at opset 13, the others at 18); keepdims
// defaults to 1; noop_with_empty_axes (input form) makes empty axes the
// identity instead of a full reduction.

func init() {
	for _, op := range []string{"ReduceMean", "ReduceSum", "ReduceL2"} {
		register(op, 1, lowerReduce)
	}
	register("ReduceSum", 13, lowerReduce)
	register("ReduceMean", 18, lowerReduce)
	register("ReduceL2", 18, lowerReduce)
}

func lowerReduce(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	op := n.GetOpType()
	asInput := (op == "ReduceSum" && b.opset >= 13) || b.opset >= 18
	var axes []int64
	if asInput {
		axes, err = optConstInts(n, in, 1, "axes")
	} else {
		axes, err = attrInts(n, "axes", nil)
	}
	if err != nil {
		return nil, err
	}
	keep, err := attrInt(n, "keepdims", 1)
	if err != nil {
		return nil, err
	}
	noop, err := attrInt(n, "noop_with_empty_axes", 0)
	if err != nil {
		return nil, err
	}
	r := len(x.shape)
	red := make([]bool, r)
	if len(axes) == 0 {
		if noop != 0 && asInput {
			return []*value{x}, nil
		}
		for i := range red {
			red[i] = true
		}
	}
	for _, a := range axes {
		i, err := normAxis(n, a, r)
		if err != nil {
			return nil, err
		}
		red[i] = true
	}
	var out, full []int // full: out with reduced dims kept as 1
	for i, d := range x.shape {
		if red[i] {
			full = append(full, 1)
			if keep != 0 {
				out = append(out, 1)
			}
		} else {
			full = append(full, d)
			out = append(out, d)
		}
	}
	// oidx[i]: the output element input element i contributes to.
	oidx := broadcastIndexInto(full, x.shape)
	cnt := float64(numel(x.shape)) / float64(max(1, numel(full)))
	fwd := func(dst []float64, in [][]float64) {
		for i, v := range in[0] {
			if op == "ReduceL2" {
				dst[oidx[i]] += v * v
			} else {
				dst[oidx[i]] += v
			}
		}
		for o := range dst {
			switch op {
			case "ReduceMean":
				dst[o] /= cnt
			case "ReduceL2":
				dst[o] = math.Sqrt(dst[o])
			}
		}
	}
	bwd := func(_ int, dst []float64, in [][]float64, y, g []float64) {
		for i, v := range in[0] {
			o := oidx[i]
			switch op {
			case "ReduceSum":
				dst[i] = g[o]
			case "ReduceMean":
				dst[i] = g[o] / cnt
			case "ReduceL2":
				if y[o] != 0 {
					dst[i] = g[o] * v / y[o]
				}
			}
		}
	}
	node, err := b.kernel(n.GetName(), op, []gnode{b.node(x)}, out, fwd, bwd, nil)
	if err != nil {
		return nil, err
	}
	return []*value{nodeValue(node)}, nil
}

// broadcastIndexInto returns, for each element of a tensor of shape big,
// the flat index of the element of shape small (same rank, dims 1 or
// equal) that it broadcasts from.
func broadcastIndexInto(small, big []int) []int {
	idx := broadcastIndex(small, big)
	if idx == nil {
		return identityIdx(numel(big))
	}
	return idx
}
