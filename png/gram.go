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
// J is read once: the columns are cut into chunks whose width depends on n
// alone (forChunks), the chunks run on up to workers goroutines
// (0 = runtime.NumCPU(); small n uses fewer), each chunk sums into its own
// m×m partial, and the partials are added in chunk order at the end: the
// result is the same bits whatever the number of workers. Products of
// float32 values are exact in float64; only the additions round. For two
// and three rows a chunk is one pass that keeps all m(m+1)/2 sums in
// registers (on AVX-512 a kernel that sums eight columns at a time in
// eight float64 lanes, added in order after). More
// rows cut a chunk into blocks of B columns whose m rows fit in L2, and
// each block contributes its m(m+1)/2 dot products (gonum's float32→float64
// Dsdot) while it is in cache.
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
// je = J·extra into je (m), in a single pass over J (see Gram). This is
// how the PNG step gets Jz = K·Coef + J·Extra without a third pass over J.
func gramPass(K, je []float64, J Jacobian, extra []float32, workers int) {
	m, n := J.M, J.N
	clear(K)
	clear(je)
	if m == 0 || n == 0 {
		return
	}
	bs := colBlock(m)
	nc := numChunks(n)
	stride := m*m + m // one partial K plus one partial je per chunk
	parts := make([]float64, nc*stride)
	forChunks(n, workers, func(k, lo, hi int) {
		part := parts[k*stride : (k+1)*stride]
		switch m {
		case 2:
			gramRange2(part, J, extra, lo, hi)
		case 3:
			gramRange3(part, J, extra, lo, hi)
		default:
			gramRange(part[:m*m], part[m*m:], J, extra, lo, hi, bs)
		}
	})
	for k := 0; k < nc; k++ {
		pk := parts[k*stride : k*stride+m*m]
		for i := 0; i < m; i++ {
			for j := 0; j <= i; j++ {
				K[i*m+j] += pk[i*m+j]
			}
		}
		if extra != nil {
			pe := parts[k*stride+m*m : (k+1)*stride]
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

// gramRange2 is gramRange for m = 2 in one pass over the columns [lo, hi)
// that adds K00, K10, K11 (part[0], part[2], part[3]) and, where extra is
// not nil, je0 and je1 (part[4], part[5]), each sum in registers: on
// AVX-512 a kernel sums eight columns at a time in eight lanes (added in
// order after), the rest in Go in column order.
func gramRange2(part []float64, J Jacobian, extra []float32, lo, hi int) {
	n := J.N
	j0s := J.Data[lo:hi]
	j1s := J.Data[n+lo : n+hi][:len(j0s)]
	// Without extra the sums J·extra are formed over j0 and dropped: the
	// loop stays one (the row is in cache; the products cost no memory).
	xs := j0s
	if extra != nil {
		xs = extra[lo:hi][:len(j0s)]
	}
	k00, k10, k11, e0, e1 := part[0], part[2], part[3], part[4], part[5]
	done := 0
	if useVec && len(j0s) >= 8 {
		done = len(j0s) &^ 7
		var lanes [5][8]float64
		plain2AVX512(&lanes, &j0s[0], &j1s[0], &xs[0], done)
		for l := 0; l < 8; l++ {
			k00 += lanes[0][l]
			k10 += lanes[1][l]
			k11 += lanes[2][l]
			e0 += lanes[3][l]
			e1 += lanes[4][l]
		}
	}
	for c := done; c < len(j0s); c++ {
		v0, v1, x := float64(j0s[c]), float64(j1s[c]), float64(xs[c])
		k00 += v0 * v0
		k10 += v1 * v0
		k11 += v1 * v1
		e0 += v0 * x
		e1 += v1 * x
	}
	part[0], part[2], part[3] = k00, k10, k11
	if extra != nil {
		part[4], part[5] = e0, e1
	}
}

// gramRange3 is gramRange2 for m = 3: K00, K10, K11, K20, K21, K22
// (part[0], part[3], part[4], part[6], part[7], part[8]) and je0, je1,
// je2 (part[9], part[10], part[11]).
func gramRange3(part []float64, J Jacobian, extra []float32, lo, hi int) {
	n := J.N
	j0s := J.Data[lo:hi]
	j1s := J.Data[n+lo : n+hi][:len(j0s)]
	j2s := J.Data[2*n+lo : 2*n+hi][:len(j0s)]
	xs := j0s // see gramRange2
	if extra != nil {
		xs = extra[lo:hi][:len(j0s)]
	}
	k00, k10, k11, k20, k21, k22 := part[0], part[3], part[4], part[6], part[7], part[8]
	e0, e1, e2 := part[9], part[10], part[11]
	done := 0
	if useVec && len(j0s) >= 8 {
		done = len(j0s) &^ 7
		var lanes [9][8]float64
		plain3AVX512(&lanes, &j0s[0], &j1s[0], &j2s[0], &xs[0], done)
		for l := 0; l < 8; l++ {
			k00 += lanes[0][l]
			k10 += lanes[1][l]
			k11 += lanes[2][l]
			k20 += lanes[3][l]
			k21 += lanes[4][l]
			k22 += lanes[5][l]
			e0 += lanes[6][l]
			e1 += lanes[7][l]
			e2 += lanes[8][l]
		}
	}
	for c := done; c < len(j0s); c++ {
		v0, v1, v2, x := float64(j0s[c]), float64(j1s[c]), float64(j2s[c]), float64(xs[c])
		k00 += v0 * v0
		k10 += v1 * v0
		k11 += v1 * v1
		k20 += v2 * v0
		k21 += v2 * v1
		k22 += v2 * v2
		e0 += v0 * x
		e1 += v1 * x
		e2 += v2 * x
	}
	part[0], part[3], part[4], part[6], part[7], part[8] = k00, k10, k11, k20, k21, k22
	if extra != nil {
		part[9], part[10], part[11] = e0, e1, e2
	}
}
