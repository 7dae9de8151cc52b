package graph

import (
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/vmath"
)

// Float32 kernels of the data-movement ops (move): the forward pass
// gathers float32 values, which is exact. The gradient of a plain copy
// (Reshape, Flatten) is a copy, as in the float64 path; that of an input
// whose elements each reach at most one output element (Transpose,
// Slice, Concat, Split) is a scatter, 0 + g as the float64 path's
// additions into zeros give; an input reaching several (Expand, Tile,
// Gather with repeated indices) sums its terms in float64 in the float64
// path's order (ascending output index) and rounds once.

// move32 is the precomputed geometry of one move.
type move32 struct {
	idx  []int // nil: a plain copy
	offs []int // input k holds positions offs[k] to offs[k+1] of the concatenation
	// once[k]: every element of input k reaches at most one output
	// element; all[k]: every element reaches at least one.
	once, all []bool
	// runs, when not nil, cuts idx into runs of consecutive positions of
	// one input (see moveRuns): Concat, Split, Slice and the channel
	// shuffle's Transpose move whole rows or planes, which the kernels
	// then copy as blocks instead of reading an index per element.
	runs *moveRuns
}

// moveRuns is idx as runs: run r writes output positions [dst[r],
// dst[r+1]) from positions src[r], src[r]+1, … of input in[r]
// (positions within that input).
type moveRuns struct {
	dst, src, in []int
}

// minRunLen is the shortest mean run for which move32 moves runs rather
// than single indices: a run costs a loop setup and a copy call (tens of
// nanoseconds), an indexed element about one; with runs of 16 and more
// the blocks are at least as fast, and the index array (8 bytes an
// element) is no longer read.
const minRunLen = 16

// runsOf cuts idx (into the concatenation offs) into runs, nil when
// their mean length is under minRunLen.
func runsOf(idx, offs []int) *moveRuns {
	if len(idx) == 0 {
		return nil
	}
	r := &moveRuns{}
	k := -1
	for i, j := range idx {
		if i > 0 && j == idx[i-1]+1 && j < offs[k+1] {
			continue
		}
		if len(r.dst)+1 > len(idx)/minRunLen {
			return nil
		}
		k = inputOf(offs, j)
		r.dst, r.src, r.in = append(r.dst, i), append(r.src, j-offs[k]), append(r.in, k)
	}
	r.dst = append(r.dst, len(idx))
	return r
}

// count is the number of runs.
func (r *moveRuns) count() int { return len(r.src) }

func newMove32(idx, offs []int) *move32 {
	m := &move32{idx: idx, offs: offs, runs: runsOf(idx, offs)}
	nin := len(offs) - 1
	m.once, m.all = make([]bool, nin), make([]bool, nin)
	if idx == nil {
		for k := range m.once {
			m.once[k], m.all[k] = true, true
		}
		return m
	}
	hits := make([]uint8, offs[nin])
	for _, j := range idx {
		if hits[j] < 2 {
			hits[j]++
		}
	}
	for k := 0; k < nin; k++ {
		m.once[k], m.all[k] = true, true
		for _, h := range hits[offs[k]:offs[k+1]] {
			m.once[k] = m.once[k] && h <= 1
			m.all[k] = m.all[k] && h >= 1
		}
	}
	return m
}

// runsArgs is a move's operands for parallel.ForItems over its runs: the
// destination, the inputs (forward) or the output's gradient and the
// input k it is taken for (backward).
type runsArgs struct {
	dst, g []float32
	in     [][]float32
	r      *moveRuns
	k      int
}

// forward is a Forward32Func writing every element.
func (m *move32) forward(dst []float32, in [][]float32) {
	if m.idx == nil {
		parallel.Copy(dst, in[0])
		return
	}
	if r := m.runs; r != nil {
		parallel.ForItems(r.count(), len(dst)/r.count(), runsArgs{dst: dst, in: in, r: r}, func(a runsArgs, lo, hi int) {
			for q := lo; q < hi; q++ {
				copy(a.dst[a.r.dst[q]:a.r.dst[q+1]], a.in[a.r.in[q]][a.r.src[q]:])
			}
		})
		return
	}
	if len(in) == 1 {
		src, idx := in[0], m.idx
		parallel.Elems(len(dst), func(lo, hi int) {
			for i, j := range idx[lo:hi] {
				dst[lo+i] = src[j]
			}
		})
		return
	}
	offs, idx := m.offs, m.idx
	parallel.Elems(len(dst), func(lo, hi int) {
		k := inputOf(offs, idx[lo])
		for i := lo; i < hi; i++ {
			j := idx[i]
			if j < offs[k] || j >= offs[k+1] {
				k = inputOf(offs, j)
			}
			dst[i] = in[k][j-offs[k]]
		}
	})
}

// backward is a Backward32Func writing every element of dst.
func (m *move32) backward(k int, dst []float32, _ [][]float32, _, g []float32) bool {
	if m.idx == nil { // a copy, as the float64 path's (Reshape's gradient)
		parallel.Copy(dst, g)
		return true
	}
	lo, hi := m.offs[k], m.offs[k+1]
	idx := m.idx
	if !m.once[k] {
		var sc F64Scratch
		defer sc.Release()
		acc := sc.Get(len(dst))
		for i, j := range idx {
			if j >= lo && j < hi {
				acc[j-lo] += float64(g[i])
			}
		}
		for i, v := range acc {
			dst[i] = float32(v)
		}
		return true
	}
	if !m.all[k] {
		kernels.ClearPar(dst)
	}
	if r := m.runs; r != nil {
		parallel.ForItems(r.count(), len(idx)/r.count(), runsArgs{dst: dst, g: g, r: r, k: k}, func(a runsArgs, lo, hi int) {
			r := a.r
			for q := lo; q < hi; q++ {
				if r.in[q] != a.k {
					continue
				}
				vmath.PlusZero32(a.dst[r.src[q]:][:r.dst[q+1]-r.dst[q]], a.g[r.dst[q]:])
			}
		})
		return true
	}
	parallel.Elems(len(idx), func(a, b int) {
		for i, j := range idx[a:b] {
			if j >= lo && j < hi {
				dst[j-lo] = 0 + g[a+i]
			}
		}
	})
	return true
}
