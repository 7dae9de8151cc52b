package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Concat and Split along one axis. Split sizes come from the "split"
// attribute before opset 13, from the optional input from 13 on, and may
// be given as num_outputs from 18 on; without them the axis is split
// evenly (the last part smaller at 18 and later).

func init() {
	graph.Register("Concat", 1, lowerConcat)
	graph.Register("Split", 1, lowerSplit)
	graph.Register("Split", 13, lowerSplit)
}

func lowerConcat(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	var ins []*graph.Value
	for i := range in {
		v, err := graph.Input(n, in, i)
		if err != nil {
			return nil, err
		}
		ins = append(ins, v)
	}
	if len(ins) == 0 {
		return nil, graph.NodeErr(n, "no inputs")
	}
	r := len(ins[0].Shape)
	a, err := graph.AxisAttr(n, 0, r)
	if err != nil {
		return nil, err
	}
	out := append([]int{}, ins[0].Shape...)
	out[a] = 0
	for i, v := range ins {
		if len(v.Shape) != r {
			return nil, graph.NodeErr(n, "input %d %q has rank %d, expected %d", i, n.Input[i], len(v.Shape), r)
		}
		for d := range v.Shape {
			if d != a && v.Shape[d] != ins[0].Shape[d] {
				return nil, graph.NodeErr(n, "input %d %q has shape %v, incompatible with %v on axis %d", i, n.Input[i], v.Shape, ins[0].Shape, a)
			}
		}
		out[a] += v.Shape[a]
	}
	outer, inner := shape.Numel(out[:a]), shape.Numel(out[a+1:])
	if v, ok, err := concatBlocks(b, n, ins, out, outer, inner, a); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return []*graph.Value{v}, nil
	}
	idx := make([]int, 0, shape.Numel(out))
	for o := 0; o < outer; o++ {
		off := 0
		for _, v := range ins {
			sz := v.Shape[a] * inner
			base := off + o*sz
			for j := 0; j < sz; j++ {
				idx = append(idx, base+j)
			}
			off += shape.Numel(v.Shape)
		}
	}
	v, err := b.Move(n, "Concat", ins, out, idx)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{v}, nil
}

func lowerSplit(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	a, err := graph.AxisAttr(n, 0, len(x.Shape))
	if err != nil {
		return nil, err
	}
	var split []int64
	if b.Opset < 13 {
		split, err = graph.AttrInts(n, "split", nil)
	} else {
		split, err = graph.OptConstInts(n, in, 1, "split")
	}
	if err != nil {
		return nil, err
	}
	dim := x.Shape[a]
	if split == nil {
		k := int64(len(n.Output))
		if b.Opset >= 18 {
			if k, err = graph.AttrInt(n, "num_outputs", k); err != nil {
				return nil, err
			}
		}
		if k <= 0 {
			return nil, graph.NodeErr(n, "cannot split into %d parts", k)
		}
		part := (int64(dim) + k - 1) / k
		if b.Opset < 18 && int64(dim)%k != 0 {
			return nil, graph.NodeErr(n, "axis %d of size %d does not split evenly into %d outputs", a, dim, k)
		}
		for left := int64(dim); left > 0; left -= part {
			split = append(split, min(part, left))
		}
	}
	total := int64(0)
	for _, s := range split {
		total += s
	}
	if total != int64(dim) || len(split) != len(n.Output) {
		return nil, graph.NodeErr(n, "split %v does not cover axis %d of size %d with %d outputs", split, a, dim, len(n.Output))
	}
	var outs []*graph.Value
	start := 0
	for _, s := range split {
		v, err := splitPiece(b, n, "Split", x, a, start, int(s))
		if err != nil {
			return nil, err
		}
		outs = append(outs, v)
		start += int(s)
	}
	return outs, nil
}

// concatBlocks lowers a Concat of float values computed at run time to a
// kernel copying whole blocks (per outer index, each input's axis·inner
// values), in float32 for float32 graphs: no index array, no float64
// copies. ok is false for constants and integer inputs, which b.move
// handles.
func concatBlocks(b *graph.Builder, n *onnxpb.NodeProto, ins []*graph.Value, out []int, outer, inner, a int) (*graph.Value, bool, error) {
	for _, v := range ins {
		if graph.IsIntNode(v) {
			return nil, false, nil
		}
	}
	allConst := true
	for _, v := range ins {
		allConst = allConst && v.IsConst()
	}
	if allConst {
		return nil, false, nil
	}
	nodes := make([]graph.Node, len(ins))
	sizes := make([]int, len(ins)) // per input: values per outer index
	for i, v := range ins {
		nodes[i] = b.Node(v)
		sizes[i] = v.Shape[a] * inner
	}
	fwd := func(dst []float64, in [][]float64) { concatFwd(dst, in, sizes, outer) }
	bwd := func(k int, dst []float64, _ [][]float64, _, grad []float64) { concatBwd(k, dst, grad, sizes, outer) }
	fwd32 := func(dst []float32, in [][]float32) { concatFwd(dst, in, sizes, outer) }
	bwd32 := func(k int, dst []float32, _ [][]float32, _, grad []float32) bool {
		concatBwd(k, dst, grad, sizes, outer)
		return true
	}
	r, err := b.FillingKernel32(n.GetName(), "Concat", nodes, out, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, true, err
	}
	return graph.NodeValue(r), true, nil
}

// concatFwd copies, per outer index, each input's block into dst, the
// output split over the cores by element ranges (MTAN's Concats at
// 288×384 copy 56–113 MB each, which one core does at about half the
// memory bandwidth two reach).
func concatFwd[T float32 | float64](dst []T, in [][]T, sizes []int, outer int) {
	row := 0
	for _, sz := range sizes {
		row += sz
	}
	parallel.ForElems(outer*row, concatArgs[T]{dst: dst[:outer*row], in: in, sizes: sizes, row: row}, func(c concatArgs[T], lo, hi int) {
		for off := lo; off < hi; {
			o, r := off/c.row, off%c.row
			k := 0
			for r >= c.sizes[k] {
				r -= c.sizes[k]
				k++
			}
			off += copy(c.dst[off:hi], c.in[k][o*c.sizes[k]+r:(o+1)*c.sizes[k]])
		}
	})
}

// concatArgs is a Concat's operands for parallel.ForElems: the output (dst), the
// inputs (in) or the output's gradient (grad), the inputs' sizes along
// the axis times the inner size, row their sum, and for the gradient of
// input k, sz its size and before the sizes ahead of it.
type concatArgs[T float32 | float64] struct {
	dst, grad       []T
	in              [][]T
	sizes           []int
	row, sz, before int
}

// concatBwd copies input k's blocks of the output gradient into dst,
// split over the cores as concatFwd.
func concatBwd[T float32 | float64](k int, dst, grad []T, sizes []int, outer int) {
	row, before := 0, 0
	for j, sz := range sizes {
		row += sz
		if j < k {
			before += sz
		}
	}
	sz := sizes[k]
	parallel.ForElems(outer*sz, concatArgs[T]{dst: dst[:outer*sz], grad: grad, row: row, sz: sz, before: before}, func(c concatArgs[T], lo, hi int) {
		for off := lo; off < hi; {
			o, r := off/c.sz, off%c.sz
			off += copy(c.dst[off:hi], c.grad[o*c.row+c.before+r:o*c.row+c.before+c.sz])
		}
	})
}
