package backend

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Matrix products: Gemm and MatMul (numpy semantics: 1-D promotion and
// broadcast batch dimensions).

func init() {
	register("Gemm", 1, lowerGemm)
	register("MatMul", 1, lowerMatMul)
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

func lowerGemm(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	A, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	B, err := input(n, in, 1)
	if err != nil {
		return nil, err
	}
	C := optInput(in, 2)
	ta, err := attrInt(n, "transA", 0)
	if err != nil {
		return nil, err
	}
	tb, err := attrInt(n, "transB", 0)
	if err != nil {
		return nil, err
	}
	alpha, err := attrFloat(n, "alpha", 1)
	if err != nil {
		return nil, err
	}
	beta, err := attrFloat(n, "beta", 1)
	if err != nil {
		return nil, err
	}
	if len(A.shape) != 2 || len(B.shape) != 2 {
		return nil, nodeErr(n, "inputs A %q and B %q must be 2-D, have shapes %v and %v", n.Input[0], n.Input[1], A.shape, B.shape)
	}
	M, K := A.shape[0], A.shape[1]
	if ta != 0 {
		M, K = K, M
	}
	K2, N := B.shape[0], B.shape[1]
	if tb != 0 {
		K2, N = N, K2
	}
	if K != K2 {
		return nil, nodeErr(n, "inner dimensions differ: A %v (transA=%d), B %v (transB=%d)", A.shape, ta, B.shape, tb)
	}
	out := []int{M, N}
	nodes := []gnode{b.node(A), b.node(B)}
	var cidx []int
	if C != nil {
		bs, err := broadcastShape(C.shape, out)
		if err != nil || !equalShape(bs, out) {
			return nil, nodeErr(n, "input C %q of shape %v does not broadcast to %v", n.Input[2], C.shape, out)
		}
		cidx = broadcastIndex(C.shape, out)
		nodes = append(nodes, b.node(C))
	}
	fwd := func(dst []float64, in [][]float64) {
		if len(in) == 3 && beta != 0 {
			for i := range dst {
				if cidx == nil {
					dst[i] = beta * in[2][i]
				} else {
					dst[i] = beta * in[2][cidx[i]]
				}
			}
		}
		gemm(ta != 0, tb != 0, M, N, K, alpha, in[0], in[1], 1, dst)
	}
	bwd := func(k int, dst []float64, in [][]float64, _, g []float64) {
		switch k {
		case 0:
			if ta == 0 { // dA (M×K) = alpha·G·op(B)ᵀ
				gemm(false, tb == 0, M, K, N, alpha, g, in[1], 0, dst)
			} else { // dA (K×M) = alpha·op(B)·Gᵀ
				gemm(tb != 0, true, K, M, N, alpha, in[1], g, 0, dst)
			}
		case 1:
			if tb == 0 { // dB (K×N) = alpha·op(A)ᵀ·G
				gemm(ta == 0, false, K, N, M, alpha, in[0], g, 0, dst)
			} else { // dB (N×K) = alpha·Gᵀ·op(A)
				gemm(true, ta != 0, N, K, M, alpha, g, in[0], 0, dst)
			}
		case 2:
			for i, v := range g {
				if cidx == nil {
					dst[i] += beta * v
				} else {
					dst[cidx[i]] += beta * v
				}
			}
		}
	}
	a32 := float32(alpha)
	fwd32 := func(dst []float32, in [][]float32) {
		if len(in) == 3 && beta != 0 {
			for i := range dst {
				if cidx == nil {
					dst[i] = float32(beta * float64(in[2][i]))
				} else {
					dst[i] = float32(beta * float64(in[2][cidx[i]]))
				}
			}
		}
		sgemm32(ta != 0, tb != 0, M, N, K, a32, in[0], in[1], 1, dst)
	}
	bwd32 := func(k int, dst []float32, in [][]float32, _, g []float32) bool {
		switch k {
		case 0:
			if ta == 0 {
				sgemm32(false, tb == 0, M, K, N, a32, g, in[1], 0, dst)
			} else {
				sgemm32(tb != 0, true, K, M, N, a32, in[1], g, 0, dst)
			}
		case 1:
			if tb == 0 {
				sgemm32(ta == 0, false, K, N, M, a32, in[0], g, 0, dst)
			} else {
				sgemm32(true, ta != 0, N, K, M, a32, g, in[0], 0, dst)
			}
		default: // dC: broadcast sums stay on the float64 path
			if cidx != nil {
				return false
			}
			for i, v := range g {
				dst[i] = float32(beta * float64(v))
			}
		}
		return true
	}
	r, err := b.kernel32(n.GetName(), "Gemm", nodes, out, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	// the gradients read A, B and the output's gradient, never C nor the output
	reads := []bool{true, true, false, false, true}
	if C == nil {
		reads = []bool{true, true, false, true}
	}
	r.Op().(*kernelOp).gradReads = reads
	return []*value{nodeValue(r)}, nil
}

func lowerMatMul(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	A, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	B, err := input(n, in, 1)
	if err != nil {
		return nil, err
	}
	as, bs := A.shape, B.shape
	if len(as) == 0 || len(bs) == 0 {
		return nil, nodeErr(n, "inputs must have rank >= 1, have shapes %v and %v", as, bs)
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
		return nil, nodeErr(n, "inner dimensions differ: %v × %v", A.shape, B.shape)
	}
	batch, err := broadcastShape(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		return nil, nodeErr(n, "batch dimensions: %v", err)
	}
	nb := numel(batch)
	ia := broadcastIndex(as[:len(as)-2], batch)
	ib := broadcastIndex(bs[:len(bs)-2], batch)
	at := func(idx []int, i int) int {
		if idx == nil {
			return i
		}
		return idx[i]
	}
	out := append(append([]int{}, batch...), M, N)
	if a1 {
		out = append(out[:len(out)-2], N)
	}
	if b1 {
		out = out[:len(out)-1]
	}
	fwd := func(dst []float64, in [][]float64) {
		for i := 0; i < nb; i++ {
			pa, pb := at(ia, i)*M*K, at(ib, i)*K*N
			gemm(false, false, M, N, K, 1, in[0][pa:pa+M*K], in[1][pb:pb+K*N], 0, dst[i*M*N:(i+1)*M*N])
		}
	}
	bwd := func(k int, dst []float64, in [][]float64, _, g []float64) {
		for i := 0; i < nb; i++ {
			pa, pb := at(ia, i)*M*K, at(ib, i)*K*N
			gi := g[i*M*N : (i+1)*M*N]
			if k == 0 { // dA += G·Bᵀ
				gemm(false, true, M, K, N, 1, gi, in[1][pb:pb+K*N], 1, dst[pa:pa+M*K])
			} else { // dB += Aᵀ·G
				gemm(true, false, K, N, M, 1, in[0][pa:pa+M*K], gi, 1, dst[pb:pb+K*N])
			}
		}
	}
	fwd32 := func(dst []float32, in [][]float32) {
		for i := 0; i < nb; i++ {
			pa, pb := at(ia, i)*M*K, at(ib, i)*K*N
			sgemm32(false, false, M, N, K, 1, in[0][pa:pa+M*K], in[1][pb:pb+K*N], 0, dst[i*M*N:(i+1)*M*N])
		}
	}
	bwd32 := func(k int, dst []float32, in [][]float32, _, g []float32) bool {
		for i := 0; i < nb; i++ {
			pa, pb := at(ia, i)*M*K, at(ib, i)*K*N
			gi := g[i*M*N : (i+1)*M*N]
			if k == 0 {
				sgemm32(false, true, M, K, N, 1, gi, in[1][pb:pb+K*N], 1, dst[pa:pa+M*K])
			} else {
				sgemm32(true, false, K, N, M, 1, in[0][pa:pa+M*K], gi, 1, dst[pb:pb+K*N])
			}
		}
		return true
	}
	r, err := b.kernel32(n.GetName(), "MatMul", []gnode{b.node(A), b.node(B)}, out, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	r.Op().(*kernelOp).gradReads = []bool{true, true, false, true} // not the output
	return []*value{nodeValue(r)}, nil
}
