package png

import (
	"fmt"

	"gonum.org/v1/gonum/blas/gonum"
)

// blockBytes is the size of the m×B tile of J that one Gram block keeps
// hot: all m rows of B columns. 256 KiB sits in L2 on current x86 cores, so
// each element of J comes from memory once and every pair (i, j) re-reads
// it from cache.
const blockBytes = 256 << 10

// colBlock returns the number of columns B per Gram block for m rows: a
// multiple of 64 with m·B float32 values in about blockBytes.
func colBlock(m int) int {
	b := blockBytes / 4 / m
	b = b / 64 * 64
	if b < 256 {
		b = 256
	}
	return b
}

// Gram writes K = J Jᵀ into dst (m×m, row-major, both triangles) with
// float64 accumulation of the float32 Jacobian.
//
// J is read once: the columns are cut into blocks of B columns (all m rows
// of a block fit in L2), each block contributes all m(m+1)/2 dot products
// while it is in cache, and the blocks are split across workers goroutines
// (0 = runtime.NumCPU(); small n uses fewer). Each worker sums into its own
// m×m partial; the partials are added in worker order at the end, so the
// result is deterministic for a given worker count. The inner products use
// gonum's float32→float64 dot kernel (Dsdot: products of float32 values are
// exact in float64).
//
// Gram panics if len(dst) != m·m or len(J.Data) != m·n.
func Gram(dst []float64, J Jacobian, workers int) {
	checkJacobian(J)
	if len(dst) != J.M*J.M {
		panic(fmt.Sprintf("png: Gram: len(dst) = %d, want m·m = %d", len(dst), J.M*J.M))
	}
	gramPass(dst, nil, J, nil, workers)
}

// checkJacobian panics when J's storage does not match its shape.
func checkJacobian(J Jacobian) {
	if J.M < 0 || J.N < 0 || len(J.Data) != J.M*J.N {
		panic(fmt.Sprintf("png: Jacobian %d×%d has len(Data) = %d, want %d", J.M, J.N, len(J.Data), J.M*J.N))
	}
}

// gramPass computes K = J Jᵀ into K (m×m) and, when extra is not nil,
// je = J·extra into je (m), in a single pass over J. This is how the PNG
// step gets Jz = K·Coef + J·Extra without a third pass over J.
func gramPass(K, je []float64, J Jacobian, extra []float32, workers int) {
	m, n := J.M, J.N
	for i := range K {
		K[i] = 0
	}
	for i := range je {
		je[i] = 0
	}
	if m == 0 || n == 0 {
		return
	}
	bs := colBlock(m)
	w := numWorkers(workers, n)
	stride := m*m + m // one partial K plus one partial je per worker
	parts := make([]float64, w*stride)
	splitCols(n, w, bs, func(wi, lo, hi int) {
		pk := parts[wi*stride : wi*stride+m*m]
		pe := parts[wi*stride+m*m : (wi+1)*stride]
		gramRange(pk, pe, J, extra, lo, hi, bs)
	})
	for wi := 0; wi < w; wi++ {
		pk := parts[wi*stride : wi*stride+m*m]
		for i := 0; i < m; i++ {
			for j := 0; j <= i; j++ {
				K[i*m+j] += pk[i*m+j]
			}
		}
		if extra != nil {
			pe := parts[wi*stride+m*m : (wi+1)*stride]
			for i := range je {
				je[i] += pe[i]
			}
		}
	}
	for i := 0; i < m; i++ {
		for j := 0; j < i; j++ {
			K[j*m+i] = K[i*m+j]
		}
	}
}

// gramRange accumulates the lower triangle of J[:, lo:hi] J[:, lo:hi]ᵀ into
// pk and J[:, lo:hi]·extra[lo:hi] into pe, block by block.
func gramRange(pk, pe []float64, J Jacobian, extra []float32, lo, hi, bs int) {
	var impl gonum.Implementation
	m, n := J.M, J.N
	for b0 := lo; b0 < hi; b0 += bs {
		b1 := b0 + bs
		if b1 > hi {
			b1 = hi
		}
		l := b1 - b0
		for i := 0; i < m; i++ {
			ri := J.Data[i*n+b0 : i*n+b1]
			for j := 0; j <= i; j++ {
				rj := J.Data[j*n+b0 : j*n+b1]
				pk[i*m+j] += impl.Dsdot(l, ri, 1, rj, 1)
			}
			if extra != nil {
				pe[i] += impl.Dsdot(l, ri, 1, extra[b0:b1], 1)
			}
		}
	}
}
