package onnxops

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Matrix products: Gemm and MatMul (numpy semantics: 1-D promotion and
// broadcast batch dimensions).

func init() {
	graph.Register("Gemm", 1, lowerGemm)
	graph.Register("MatMul", 1, lowerMatMul)
}

// gemm computes c = alpha·op(a)·op(b) + beta·c for row-major op(a) (m×k)
// and op(b) (k×n); a is stored k×m when ta, b is stored n×k when tb.
func gemm(ta, tb bool, m, n, k int, alpha float64, a, b []float64, beta float64, c []float64) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := range c[:m*n] {
			c[i] *= beta
		}
		return
	}
	A := blas64.General{Rows: m, Cols: k, Stride: k, Data: a}
	tA := blas.NoTrans
	if ta {
		A, tA = blas64.General{Rows: k, Cols: m, Stride: m, Data: a}, blas.Trans
	}
	B := blas64.General{Rows: k, Cols: n, Stride: n, Data: b}
	tB := blas.NoTrans
	if tb {
		B, tB = blas64.General{Rows: n, Cols: k, Stride: k, Data: b}, blas.Trans
	}
	blas64.Gemm(tA, tB, alpha, A, B, beta, blas64.General{Rows: m, Cols: n, Stride: n, Data: c})
}

func lowerGemm(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	A, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	B, err := graph.Input(n, in, 1)
	if err != nil {
		return nil, err
	}
	C := graph.OptInput(in, 2)
	ta, err := graph.AttrInt(n, "transA", 0)
	if err != nil {
		return nil, err
	}
	tb, err := graph.AttrInt(n, "transB", 0)
	if err != nil {
		return nil, err
	}
	alpha, err := graph.AttrFloat(n, "alpha", 1)
	if err != nil {
		return nil, err
	}
	beta, err := graph.AttrFloat(n, "beta", 1)
	if err != nil {
		return nil, err
	}
	if len(A.Shape) != 2 || len(B.Shape) != 2 {
		return nil, graph.NodeErr(n, "inputs A %q and B %q must be 2-D, have shapes %v and %v", n.Input[0], n.Input[1], A.Shape, B.Shape)
	}
	M, K := A.Shape[0], A.Shape[1]
	if ta != 0 {
		M, K = K, M
	}
	K2, N := B.Shape[0], B.Shape[1]
	if tb != 0 {
		K2, N = N, K2
	}
	if K != K2 {
		return nil, graph.NodeErr(n, "inner dimensions differ: A %v (transA=%d), B %v (transB=%d)", A.Shape, ta, B.Shape, tb)
	}
	out := []int{M, N}
	nodes := []graph.Node{b.Node(A), b.Node(B)}
	var cidx []int
	if C != nil {
		bs, err := shape.Broadcast(C.Shape, out)
		if err != nil || !shape.Equal(bs, out) {
			return nil, graph.NodeErr(n, "input C %q of shape %v does not broadcast to %v", n.Input[2], C.Shape, out)
		}
		cidx = shape.BroadcastIndex(C.Shape, out)
		nodes = append(nodes, b.Node(C))
	}
	g := gemmOp{ta: ta != 0, tb: tb != 0, m: M, n: N, k: K, alpha: alpha, beta: beta, cidx: cidx}
	fwd, bwd64 := gemmFwd(gemm, g), gemmBwd(gemm, g)
	bwd := func(k int, dst []float64, in [][]float64, _, grad []float64) { bwd64(k, dst, in, grad) }
	fwd32, bwd32g := gemmFwd(sgemm32, g), gemmBwd(sgemm32, g)
	bwd32 := func(k int, dst []float32, in [][]float32, _, grad []float32) bool { return bwd32g(k, dst, in, grad) }
	r, err := b.Kernel32(n.GetName(), "Gemm", nodes, out, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	// the gradients read A, B and the output's gradient, never C nor the output
	reads := []bool{true, true, false, false, true}
	if C == nil {
		reads = []bool{true, true, false, true}
	}
	op := r.Op().(*graph.KernelOp)
	op.GradReads = reads
	// The products write every element of the result and of A's and B's
	// gradients (beta 0: no zeroing first); C's gradient writes every
	// element too (gemmBwd), and so does the forward pass when it starts
	// from beta·C.
	op.FwdFills = C != nil && beta != 0
	op.GradFills = []bool{true, true, true}
	// A's and B's gradients are products of the forward pass's size; C's a sum
	op.FLOPs = func(k int) int64 {
		if k > 1 {
			return 0
		}
		return 2 * int64(M) * int64(N) * int64(K)
	}
	return []*graph.Value{graph.NodeValue(r)}, nil
}

func lowerMatMul(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	A, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	B, err := graph.Input(n, in, 1)
	if err != nil {
		return nil, err
	}
	as, bs := A.Shape, B.Shape
	if len(as) == 0 || len(bs) == 0 {
		return nil, graph.NodeErr(n, "inputs must have rank >= 1, have shapes %v and %v", as, bs)
	}
	a1, b1 := len(as) == 1, len(bs) == 1
	if a1 {
		as = []int{1, as[0]}
	}
	if b1 {
		bs = []int{bs[0], 1}
	}
	M, K := as[len(as)-2], as[len(as)-1]
	K2, N := bs[len(bs)-2], bs[len(bs)-1]
	if K != K2 {
		return nil, graph.NodeErr(n, "inner dimensions differ: %v × %v", A.Shape, B.Shape)
	}
	batch, err := shape.Broadcast(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		return nil, graph.NodeErr(n, "batch dimensions: %v", err)
	}
	nb := shape.Numel(batch)
	ia := shape.BroadcastIndex(as[:len(as)-2], batch)
	ib := shape.BroadcastIndex(bs[:len(bs)-2], batch)
	out := append(append([]int{}, batch...), M, N)
	if a1 {
		out = append(out[:len(out)-2], N)
	}
	if b1 {
		out = out[:len(out)-1]
	}
	mm := matMulOp{m: M, n: N, k: K, nb: nb, ia: ia, ib: ib}
	if ia == nil && allZero(ib) {
		// One B for every batch (a Linear over [N, H, W, C], attention's
		// projections): the batches of A and of the output are contiguous
		// rows, so the products are one of nb·M rows, and B's gradient
		// one product over all of them instead of nb small ones, each
		// packing B again.
		mm = matMulOp{m: nb * M, n: N, k: K, nb: 1}
	}
	fwd, bwd64 := matMulFwd(gemm, mm), matMulBwd(gemm, mm)
	bwd := func(k int, dst []float64, in [][]float64, _, g []float64) { bwd64(k, dst, in, g) }
	fwd32, bwd32g := matMulFwd(sgemm32, mm), matMulBwd(sgemm32, mm)
	bwd32 := func(k int, dst []float32, in [][]float32, _, g []float32) bool { bwd32g(k, dst, in, g); return true }
	r, err := b.Kernel32(n.GetName(), "MatMul", []graph.Node{b.Node(A), b.Node(B)}, out, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	op := r.Op().(*graph.KernelOp)
	op.GradReads = []bool{true, true, false, true} // not the output
	// The products write every element of the result, and of the gradient
	// of an operand with a batch per product (matMulBwd: beta 0); the
	// gradient of a broadcast operand sums into zeros.
	op.FwdFills = true
	op.GradFills = []bool{mm.ia == nil, mm.ib == nil}
	// nb products of M×K by K×N, in every pass
	op.FLOPs = func(int) int64 { return 2 * int64(mm.nb) * int64(mm.m) * int64(mm.n) * int64(mm.k) }
	return []*graph.Value{graph.NodeValue(r)}, nil
}

// mmFunc is a matrix product on row-major data, c = alpha·op(a)·op(b) +
// beta·c: gemm (float64, gonum) or sgemm32 (float32, accumulating in
// float32). Gemm's and MatMul's kernels are written once over it.
type mmFunc[T graph.Float] func(ta, tb bool, m, n, k int, alpha T, a, b []T, beta T, c []T)

// gemmOp is the geometry of one Gemm node: op(A) m×k, op(B) k×n, C
// broadcast through cidx (nil: C has the output's shape).
type gemmOp struct {
	ta, tb      bool
	m, n, k     int
	alpha, beta float64
	cidx        []int
}

// gemmFwd is Gemm's forward pass with mm: dst = beta·C (each term
// rounded once) + alpha·op(A)·op(B).
func gemmFwd[T graph.Float](mm mmFunc[T], g gemmOp) func(dst []T, in [][]T) {
	return func(dst []T, in [][]T) {
		if len(in) == 3 && g.beta != 0 {
			for i := range dst {
				j := i
				if g.cidx != nil {
					j = g.cidx[i]
				}
				dst[i] = T(g.beta * float64(in[2][j]))
			}
		}
		mm(g.ta, g.tb, g.m, g.n, g.k, T(g.alpha), in[0], in[1], 1, dst)
	}
}

// gemmBwd is Gemm's gradient of input k with mm, into dst (zeroed in the
// float64 path; written over in the float32 one). The
// gradient of a broadcast C sums several terms, in float64 in both paths
// (the float32 one rounds each sum once: the float64 path's bits).
func gemmBwd[T graph.Float](mm mmFunc[T], g gemmOp) func(k int, dst []T, in [][]T, grad []T) bool {
	alpha := T(g.alpha)
	return func(k int, dst []T, in [][]T, grad []T) bool {
		switch k {
		case 0:
			if !g.ta { // dA (M×K) = alpha·G·op(B)ᵀ
				mm(false, !g.tb, g.m, g.k, g.n, alpha, grad, in[1], 0, dst)
			} else { // dA (K×M) = alpha·op(B)·Gᵀ
				mm(g.tb, true, g.k, g.m, g.n, alpha, in[1], grad, 0, dst)
			}
		case 1:
			if !g.tb { // dB (K×N) = alpha·op(A)ᵀ·G
				mm(!g.ta, false, g.k, g.n, g.m, alpha, in[0], grad, 0, dst)
			} else { // dB (N×K) = alpha·Gᵀ·op(A)
				mm(true, g.ta, g.n, g.k, g.m, alpha, grad, in[0], 0, dst)
			}
		default:
			if g.cidx != nil {
				if d32, f32 := any(dst).([]float32); f32 {
					// float64 sums in the float64 path's order, rounded once
					var sc graph.F64Scratch
					defer sc.Release()
					acc := sc.Get(len(d32))
					for i, v := range any(grad).([]float32) {
						acc[g.cidx[i]] += g.beta * float64(v)
					}
					for i, v := range acc {
						d32[i] = float32(v)
					}
					return true
				}
				for i, v := range grad {
					dst[g.cidx[i]] += T(g.beta * float64(v))
				}
				return true
			}
			for i, v := range grad { // 0 + x: the sum into zeros it was
				dst[i] = 0 + T(g.beta*float64(v))
			}
		}
		return true
	}
}

// matMulOp is the geometry of one MatMul node: nb products of M×K by K×N,
// the operands' batches broadcast through ia and ib (nil: one each).
type matMulOp struct {
	m, n, k, nb int
	ia, ib      []int
}

// operands returns the offsets of product i's A and B.
func (o matMulOp) operands(i int) (pa, pb int) {
	ja, jb := i, i
	if o.ia != nil {
		ja = o.ia[i]
	}
	if o.ib != nil {
		jb = o.ib[i]
	}
	return ja * o.m * o.k, jb * o.k * o.n
}

// matMulFwd is MatMul's forward pass with mm.
func matMulFwd[T graph.Float](mm mmFunc[T], o matMulOp) func(dst []T, in [][]T) {
	return func(dst []T, in [][]T) {
		for i := 0; i < o.nb; i++ {
			pa, pb := o.operands(i)
			mm(false, false, o.m, o.n, o.k, 1, in[0][pa:pa+o.m*o.k], in[1][pb:pb+o.k*o.n], 0, dst[i*o.m*o.n:(i+1)*o.m*o.n])
		}
	}
}

// matMulBwd is MatMul's gradient of input k with mm, into dst, summed
// over the products that share a broadcast operand: dst is zeroed then,
// and otherwise (an operand with a batch per product, ia or ib nil) each
// product writes its own block over it (beta 0).
func matMulBwd[T graph.Float](mm mmFunc[T], o matMulOp) func(k int, dst []T, in [][]T, grad []T) {
	return func(k int, dst []T, in [][]T, grad []T) {
		beta := T(1)
		if (k == 0 && o.ia == nil) || (k == 1 && o.ib == nil) {
			beta = 0
		}
		for i := 0; i < o.nb; i++ {
			pa, pb := o.operands(i)
			gi := grad[i*o.m*o.n : (i+1)*o.m*o.n]
			if k == 0 { // dA += G·Bᵀ
				mm(false, true, o.m, o.k, o.n, 1, gi, in[1][pb:pb+o.k*o.n], beta, dst[pa:pa+o.m*o.k])
			} else { // dB += Aᵀ·G
				mm(true, false, o.k, o.n, o.m, 1, in[0][pa:pa+o.m*o.k], gi, beta, dst[pb:pb+o.k*o.n])
			}
		}
	}
}

// allZero reports whether idx is a broadcast index mapping every element
// to the first (an operand with one batch); nil is the identity, not that.
func allZero(idx []int) bool {
	if idx == nil {
		return false
	}
	for _, v := range idx {
		if v != 0 {
			return false
		}
	}
	return true
}
