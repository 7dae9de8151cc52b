package onnxops

import (
	"slices"
	"sync"

	fgemm "github.com/paretonav/paretonav/backend/internal/gemm"
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/backend/internal/vmath"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Transpose (perm defaults to reversing the axes).

func init() { graph.Register("Transpose", 1, lowerTranspose) }

func lowerTranspose(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	r := len(x.Shape)
	perm, err := graph.AttrInts(n, "perm", nil)
	if err != nil {
		return nil, err
	}
	if perm == nil {
		for i := r - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	if len(perm) != r {
		return nil, graph.NodeErr(n, "perm %v has %d entries for an input of rank %d", perm, len(perm), r)
	}
	seen := make([]bool, r)
	out := make([]int, r)
	for i, p := range perm {
		if p < 0 || int(p) >= r || seen[p] {
			return nil, graph.NodeErr(n, "perm %v is not a permutation of 0..%d", perm, r-1)
		}
		seen[p] = true
		out[i] = x.Shape[p]
	}
	if !x.IsConst() && !graph.IsIntNode(x) {
		return transposeKernel(b, n, x, perm, out)
	}
	v, err := b.Move(n, "Transpose", []*graph.Value{x}, out, transposeIndex(x.Shape, perm, out))
	if err != nil {
		return nil, err
	}
	return []*graph.Value{v}, nil
}

// transposeIndex is, for each element of the transposed result (shape
// out), the flat index in x (shape xs) it reads.
func transposeIndex(xs []int, perm []int64, out []int) []int {
	r := len(xs)
	ist := shape.Strides(xs)
	idx := make([]int, shape.Numel(out))
	ctr := make([]int, r)
	for i := range idx {
		off := 0
		for d := 0; d < r; d++ {
			off += ctr[d] * ist[perm[d]]
		}
		idx[i] = off
		shape.NextIndex(ctr, out)
	}
	return idx
}

// transposeKernel is Transpose of a float node: the float32 kernels walk
// the axes (no index per element: ConvNeXt's NCHW/NHWC transposes held
// 40 MB of them at 64×64), the gradient being the inverse transpose (0 +
// g, as the float64 path's additions into zeros give); the float64
// closures build the index on first use.
func transposeKernel(b *graph.Builder, n *onnxpb.NodeProto, x *graph.Value, perm []int64, out []int) ([]*graph.Value, error) {
	xs := append([]int{}, x.Shape...)
	inv := make([]int64, len(perm))
	for i, p := range perm {
		inv[p] = int64(i)
	}
	var once sync.Once
	var idx []int
	index := func() []int {
		once.Do(func() { idx = transposeIndex(xs, perm, out) })
		return idx
	}
	fwd := func(dst []float64, in [][]float64) {
		for i, j := range index() {
			dst[i] = in[0][j]
		}
	}
	bwd := func(_ int, dst []float64, _ [][]float64, _, g []float64) {
		for i, j := range index() {
			dst[j] += g[i]
		}
	}
	fwd32 := func(dst []float32, in [][]float32) { transpose32(dst, in[0], xs, perm, false) }
	bwd32 := func(_ int, dst []float32, _ [][]float32, _, g []float32) bool {
		transpose32(dst, g, out, inv, true)
		return true
	}
	r, err := b.FillingKernel32(n.GetName(), "Transpose", []graph.Node{b.Node(x)}, out, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	r.Op().(*graph.KernelOp).GradReads = []bool{false, false, true} // the output's gradient only
	return []*graph.Value{graph.NodeValue(r)}, nil
}

// transpose32 writes src (shape xs) transposed by perm into dst, every
// element (0 + v when plusZero: −0 becomes +0). Rows of the result's last
// axis are split across goroutines; each gathers with src's stride along
// that axis.
func transpose32(dst, src []float32, xs []int, perm []int64, plusZero bool) {
	r := len(xs)
	if r == 0 {
		dst[0] = src[0]
		if plusZero {
			dst[0] += 0
		}
		return
	}
	xs, perm = mergeAxes(xs, perm)
	r = len(xs)
	if r > maxTransposeRank {
		transposeRows(transposeArgs{dst: dst, src: src, r: r, plusZero: plusZero}, xs, perm)
		return
	}
	if transposeLast2(dst, src, xs, perm, plusZero) {
		return
	}
	t := transposeArgs{dst: dst, src: src, r: r, plusZero: plusZero}
	acc := 1 // src's row-major stride along axis i
	for i := r - 1; i >= 0; i-- {
		t.ist[i] = acc
		acc *= xs[i]
	}
	for i, p := range perm {
		t.out[i], t.st[i] = xs[p], t.ist[p]
	}
	t.last, t.ls = t.out[r-1], t.st[r-1]
	if t.last == 0 {
		return
	}
	rows := len(dst) / t.last
	if min(rows*t.last/parallel.ElemChunk, rows) <= 1 { // parallel.Items' bound: no closure
		t.rows(0, rows)
		return
	}
	tp := t // its own variable: the closure takes it to the heap, t stays on the stack
	parallel.Items(rows, t.last, func(lo, hi int) { tp.rows(lo, hi) })
}

// swapArgs is a batch of n matrices a×b (src) to transpose into dst.
type swapArgs struct {
	dst, src []float32
	a, b     int
	plusZero bool
}

// transposeLast2 writes the transpose that, its axes merged, swaps the two
// axes of [A, B] or the last two of [N, A, B] (NCHW to NHWC and back, as
// ConvNeXt's blocks do around their LayerNorm and MLP), and reports
// whether it did. Bands of 8 rows of each matrix move as 8×8 blocks
// through fgemm.TransposeRows (AVX2: 8 loads and 8 stores a block), where
// transposeArgs.rows gathers one value per load with the stride of A; it
// leaves matrices under 8 either way, and CPUs without AVX2, to that walk.
func transposeLast2(dst, src []float32, xs []int, perm []int64, plusZero bool) bool {
	var n, a, b int
	switch {
	case len(xs) == 2 && perm[0] == 1 && perm[1] == 0:
		n, a, b = 1, xs[0], xs[1]
	case len(xs) == 3 && perm[0] == 0 && perm[1] == 2 && perm[2] == 1:
		n, a, b = xs[0], xs[1], xs[2]
	default:
		return false
	}
	if a < 8 || b < 8 || !fgemm.CanTransposeRows() {
		return false
	}
	if n == 1 { // one matrix: bands of 8 rows in parallel, −0 made +0 as they are written
		bands := (a + 7) / 8
		parallel.ForItems(bands, 8*b, swapArgs{dst: dst, src: src, a: a, b: b, plusZero: plusZero},
			func(s swapArgs, lo, hi int) {
				fgemm.TransposeRows(s.dst, s.a, s.src, s.b, s.b, 8*lo, min(8*hi, s.a), s.plusZero)
			})
		return true
	}
	// Matrices in parallel; a gradient's −0 made +0 in one vector pass over
	// each written matrix, still in cache, rather than 8 values at a time.
	parallel.ForItems(n, a*b, swapArgs{dst: dst, src: src, a: a, b: b, plusZero: plusZero},
		func(s swapArgs, lo, hi int) {
			plane := s.a * s.b
			for m := lo; m < hi; m++ {
				d := s.dst[m*plane:][:plane]
				fgemm.TransposeRows(d, s.a, s.src[m*plane:][:plane], s.b, s.b, 0, s.a, false)
				if s.plusZero {
					vmath.PlusZero32(d, d)
				}
			}
		})
	return true
}

// maxTransposeRank is the highest rank transpose32 handles in fixed-size
// arrays; a higher one takes transposeRows's slices.
const maxTransposeRank = 8

// transposeArgs is a transpose's operands and geometry: out and st are
// the result's shape and src's stride along each result axis, last and ls
// those of the last axis.
type transposeArgs struct {
	dst, src     []float32
	out, st, ist [maxTransposeRank]int
	r, last, ls  int
	plusZero     bool
}

// transposeRows is transpose32 for a rank above maxTransposeRank.
func transposeRows(t transposeArgs, xs []int, perm []int64) {
	ist := shape.Strides(xs)
	out := make([]int, t.r)
	st := make([]int, t.r)
	for i, p := range perm {
		out[i], st[i] = xs[p], ist[p]
	}
	last := out[t.r-1]
	if last == 0 {
		return
	}
	rows := len(t.dst) / last
	for row := range rows {
		off, rem := 0, row
		for d := t.r - 2; d >= 0; d-- {
			off += rem % out[d] * st[d]
			rem /= out[d]
		}
		d := t.dst[row*last:][:last]
		for i := range d {
			d[i] = t.src[off+i*st[t.r-1]]
			if t.plusZero {
				d[i] += 0
			}
		}
	}
}

// rows writes the result's rows [lo, hi), each gathered with src's stride
// along the last axis.
func (t *transposeArgs) rows(lo, hi int) {
	r, out, st, last, ls, dst, src, plusZero := t.r, &t.out, &t.st, t.last, t.ls, t.dst, t.src, t.plusZero
	var ctr [maxTransposeRank]int
	off := 0
	for d, rem := r-2, lo; d >= 0; d-- { // lo's position along the leading axes
		ctr[d] = rem % out[d]
		rem /= out[d]
		off += ctr[d] * st[d]
	}
	for row := lo; row < hi; row++ {
		d := dst[row*last:][:last]
		switch {
		case ls == 1 && plusZero: // one pass, not a copy and then another
			vmath.PlusZero32(d, src[off:])
		case ls == 1:
			copy(d, src[off:off+last])
		case plusZero:
			j := off
			for i := range d {
				d[i] = 0 + src[j]
				j += ls
			}
		default:
			j := off
			for i := range d {
				d[i] = src[j]
				j += ls
			}
		}
		for a := r - 2; a >= 0; a-- { // next row
			ctr[a]++
			off += st[a]
			if ctr[a] < out[a] {
				break
			}
			off -= st[a] * out[a]
			ctr[a] = 0
		}
	}
}

// mergeAxes is the transpose of shape xs by perm as one of lower rank
// moving the same elements: axes of size 1 are dropped, and axes that
// stay next to each other in the same order are merged into one. The
// channel shuffle's [N, 2, C/2, H, W] by (0, 2, 1, 3, 4) becomes [N, 2,
// C/2, H·W] by (0, 2, 1, 3), whose rows are whole planes, not rows of W
// values; NCHW to NHWC becomes [N, C, H·W] by (0, 2, 1).
func mergeAxes(xs []int, perm []int64) ([]int, []int64) {
	var p []int // perm over the axes of size above 1, numbered among them
	kept := make([]int, len(xs))
	n := 0
	for i, d := range xs {
		kept[i] = n
		if d != 1 {
			n++
		}
	}
	for _, a := range perm {
		if xs[a] != 1 {
			p = append(p, kept[a])
		}
	}
	if len(p) == 0 {
		return []int{1}, []int64{0}
	}
	size := make([]int, 0, len(p))
	for _, d := range xs {
		if d != 1 {
			size = append(size, d)
		}
	}
	// groups of the result's axes: a run of p ascending by one
	var first []int // per group, its first source axis
	for i, a := range p {
		if i == 0 || a != p[i-1]+1 {
			first = append(first, a)
		}
	}
	// the groups in source order: a group's source axes run from its
	// first to the next group's first (in source order) minus one
	order := append([]int{}, first...)
	slices.Sort(order)
	ms := make([]int, len(order))
	for g, a := range order {
		end := len(size)
		if g+1 < len(order) {
			end = order[g+1]
		}
		ms[g] = 1
		for _, d := range size[a:end] {
			ms[g] *= d
		}
	}
	mp := make([]int64, len(first))
	for i, a := range first {
		mp[i] = int64(slices.Index(order, a))
	}
	return ms, mp
}
