package backend

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// bindParam binds a parameter's values v (a slice of θ) to n. In float32
// mode the tensor is backed by v itself, not a copy: no op writes into its
// inputs, and θ changes only between Evaluates (SetParams), so the graph
// holds no second copy of the parameters. A node already bound to a
// tensor of v (the step before, θ updated in place) keeps it: a tensor
// per parameter per step was most of a small model's step's garbage.
// Otherwise it is bind.
func (c *compiled) bindParam(n graph.Node, dt tensor.Dtype, s []int, v []float32) error {
	if dt != tensor.Float32 || len(s) == 0 {
		return c.bind(n, dt, s, v, nil)
	}
	if cur, ok := n.Value().(*tensor.Dense); ok && !cur.RequiresIterator() && cur.Shape().Eq(tensor.Shape(s)) && graph.BackedBy(cur, v) {
		c.stats.boundParamsKept.Add(1)
		return nil
	}
	return G.Let(n, tensor.New(tensor.WithShape(s...), tensor.WithBacking(v[:len(v):len(v)])))
}

// bind binds the values of an input node of shape s for the next program
// run: f32 when it is not nil, else t's values. In float32 mode the node
// keeps one tensor across calls and the values are copied into it; this
// is safe because no op writes into its inputs and the program's values
// are dead once Evaluate has copied its results out. Scalars and float64
// mode bind fresh values.
func (c *compiled) bind(n graph.Node, dt tensor.Dtype, s []int, f32 []float32, t *importer.Tensor) error {
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
		return graph.LetFloats(n, dt, s, d)
	}
	if c.bufs == nil {
		c.bufs = map[graph.Node]*tensor.Dense{}
	}
	buf, ok := c.bufs[n]
	if !ok || !shape.Equal(buf.Shape(), s) {
		buf = tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(s...))
		c.bufs[n] = buf
	}
	dst, _ := graph.Data32(buf)
	if f32 != nil {
		copy(dst, f32)
	} else {
		for i := range dst {
			dst[i] = float32(tensorFloat64(t, i))
		}
	}
	return G.Let(n, buf)
}

// tensorFloat64 is element i of t as float64, the value t.Float64s()[i]
// has, without copying t (a batch's targets are read every step).
func tensorFloat64(t *importer.Tensor, i int) float64 {
	switch {
	case t.F64 != nil:
		if i < len(t.F64) {
			return t.F64[i]
		}
	case t.F32 != nil:
		if i < len(t.F32) {
			return float64(t.F32[i])
		}
	default:
		if i < len(t.I64) {
			return float64(t.I64[i])
		}
	}
	return 0
}
