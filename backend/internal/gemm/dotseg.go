package gemm

import "fmt"

// SdotRowsSeg adds a·bᵀ to c (m×n, row stride ldc) for rows made of nseg
// segments of k values each: row i of a is the segments a[i·lda+s·sa:][:k]
// and row j of b the segments b[boff[j]+s·sb:][:k], s < nseg. A
// convolution's weight gradient of stride 1 is such a product: the output
// gradient's rows of oW values (sa = oW) against each tap's rows of the
// input (sb = W), read in place, without spreading the output gradient to
// rows of width W. It returns false, doing nothing, when the CPU has no
// such kernel (the caller then spreads the rows and calls SdotRows); it
// panics when a row lies outside its slice.
func SdotRowsSeg(m, n, k, nseg int, a []float32, lda, sa int, b []float32, boff []int, sb int, c []float32, ldc int) bool {
	if !Accelerated() || active.dotSeg == nil {
		return false
	}
	if m < 0 || n < 0 || k < 1 || nseg < 0 || sa < 0 || sb < 0 || len(boff) < n || lda < 0 || ldc < n {
		panic(fmt.Sprintf("gemm: SdotRowsSeg: m=%d n=%d k=%d nseg=%d lda=%d sa=%d sb=%d ldc=%d with %d row offsets", m, n, k, nseg, lda, sa, sb, ldc, len(boff)))
	}
	if m == 0 || n == 0 || nseg == 0 {
		return true
	}
	if len(a) < (m-1)*lda+(nseg-1)*sa+k || len(c) < (m-1)*ldc+n {
		panic(fmt.Sprintf("gemm: SdotRowsSeg: len(a) = %d, len(c) = %d too short", len(a), len(c)))
	}
	for _, o := range boff[:n] {
		if o < 0 || o+(nseg-1)*sb+k > len(b) {
			panic(fmt.Sprintf("gemm: SdotRowsSeg: row of b at %d (%d segments of %d, %d apart) outside len(b) = %d", o, nseg, k, sb, len(b)))
		}
	}
	dotTiles(active, dotSegs{nseg: nseg, sa: sa, sb: sb}, m, n, k, 1, a, lda, b, func(j int) int { return boff[j] }, c, ldc)
	return true
}
