package graph

import (
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Move builds a pure data-movement result: out[i] = cat[idx[i]], where cat
// is the row-major concatenation of the flat data of ins. Reshape,
// Transpose, Concat, Slice, Gather, ... are all instances. When every
// input is a constant the result is a constant of the same element type
// (this keeps shape arithmetic foldable); otherwise it is a kernel whose
// gradient scatters back.
func (b *Builder) Move(n *onnxpb.NodeProto, kind string, ins []*Value, out []int, idx []int) (*Value, error) {
	if len(idx) != shape.Numel(out) {
		return nil, NodeErr(n, "internal: %d indices for output shape %v", len(idx), out)
	}
	allConst := true
	for _, v := range ins {
		allConst = allConst && v.IsConst()
	}
	if allConst {
		return ConstValue(moveConst(n.GetName(), ins, out, idx)), nil
	}
	for _, v := range ins {
		if IsIntNode(v) {
			return b.MoveInt(n, kind, ins, out, idx)
		}
	}
	offs := make([]int, len(ins)+1)
	nodes := make([]Node, len(ins))
	for i, v := range ins {
		offs[i+1] = offs[i] + shape.Numel(v.Shape)
		nodes[i] = b.Node(v)
	}
	if len(ins) == 1 && isIdentity(idx) && shape.Numel(ins[0].Shape) == len(idx) {
		idx = nil // plain copy
	}
	fwd := func(dst []float64, in [][]float64) {
		if idx == nil {
			copy(dst, in[0])
			return
		}
		if len(in) == 1 {
			src := in[0]
			for i, j := range idx {
				dst[i] = src[j]
			}
			return
		}
		for i, j := range idx {
			k := inputOf(offs, j)
			dst[i] = in[k][j-offs[k]]
		}
	}
	bwd := func(k int, dst []float64, _ [][]float64, _, grad []float64) {
		if idx == nil {
			copy(dst, grad)
			return
		}
		lo, hi := offs[k], offs[k+1]
		for i, j := range idx {
			if j >= lo && j < hi {
				dst[j-lo] += grad[i]
			}
		}
	}
	m := newMove32(idx, offs)
	r, err := b.FillingKernel32(n.GetName(), kind, nodes, out, fwd, bwd, nil, m.forward, m.backward)
	if err != nil {
		return nil, err
	}
	// the gradient reads the output's gradient only
	reads := make([]bool, len(ins)+2)
	reads[len(ins)+1] = true
	r.Op().(*KernelOp).GradReads = reads
	r.Op().(*KernelOp).PlainCopy = idx == nil
	return NodeValue(r), nil
}

// MoveInt is move for run-time int64 tensors (MaxPool indices): the
// result is an int64 node without gradient.
func (b *Builder) MoveInt(n *onnxpb.NodeProto, kind string, ins []*Value, out []int, idx []int) (*Value, error) {
	offs := make([]int, len(ins)+1)
	for i, v := range ins {
		offs[i+1] = offs[i] + shape.Numel(v.Shape)
	}
	return b.IntOp(n, kind, ins, out, func(dst []int64, in [][]int64) {
		for i, j := range idx {
			k := inputOf(offs, j)
			dst[i] = in[k][j-offs[k]]
		}
	})
}

func isIdentity(idx []int) bool {
	for i, j := range idx {
		if i != j {
			return false
		}
	}
	return true
}

// inputOf returns k such that offs[k] <= j < offs[k+1].
func inputOf(offs []int, j int) int {
	lo, hi := 0, len(offs)-2
	for lo < hi {
		m := (lo + hi + 1) / 2
		if offs[m] <= j {
			lo = m
		} else {
			hi = m - 1
		}
	}
	return lo
}

// moveConst applies a data movement to constants, keeping the element
// type of the first input (all inputs are converted to it).
func moveConst(name string, ins []*Value, out []int, idx []int) *importer.Tensor {
	t0 := ins[0].C
	r := &importer.Tensor{Name: name, Type: t0.Type, Shape: append([]int{}, out...)}
	switch {
	case t0.F64 != nil:
		var cat []float64
		for _, v := range ins {
			cat = append(cat, v.C.Float64s()...)
		}
		r.F64 = make([]float64, len(idx))
		for i, j := range idx {
			r.F64[i] = cat[j]
		}
	case t0.F32 != nil:
		var cat []float32
		for _, v := range ins {
			if v.C.F32 != nil {
				cat = append(cat, v.C.F32...)
			} else {
				for _, x := range v.C.Float64s() {
					cat = append(cat, float32(x))
				}
			}
		}
		r.F32 = make([]float32, len(idx))
		for i, j := range idx {
			r.F32[i] = cat[j]
		}
	default:
		var cat []int64
		for _, v := range ins {
			cat = append(cat, v.C.Int64s()...)
		}
		r.I64 = make([]int64, len(idx))
		for i, j := range idx {
			r.I64[i] = cat[j]
		}
	}
	return r
}
