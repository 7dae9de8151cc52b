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
// panics when a row lies outside its slice. Its loop is dotTiles' with
// kr.dotSeg, written out: through dotTiles (a row-offset function and a
// choice of kernel per tile) the LeNet fixture's weight gradient took 5%
// longer (BenchmarkConvWideRows/lenet2/dw/inplace, one thread).
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
	kr := active
	var t *[12]float32 // the edge tile, lent by edgeTiles on the first edge (see dotTiles)
	var ar [3]int
	var br [4]int
	for i0 := 0; i0 < m; i0 += 3 {
		h := min(3, m-i0)
		for i := range ar {
			ar[i] = (i0 + min(i, h-1)) * lda
		}
		for j0 := 0; j0 < n; j0 += 4 {
			w := min(4, n-j0)
			for j := range br {
				br[j] = boff[j0+min(j, w-1)]
			}
			if h == 3 && w == 4 {
				kr.dotSeg(k, nseg, sa, sb, &a[ar[0]], &a[ar[1]], &a[ar[2]], &b[br[0]], &b[br[1]], &b[br[2]], &b[br[3]], &c[i0*ldc+j0], ldc, 1)
				continue
			}
			// An edge block repeats its last row; its duplicate results
			// are dropped.
			if t == nil {
				t = edgeTiles.Get().(*[12]float32)
			}
			*t = [12]float32{}
			kr.dotSeg(k, nseg, sa, sb, &a[ar[0]], &a[ar[1]], &a[ar[2]], &b[br[0]], &b[br[1]], &b[br[2]], &b[br[3]], &t[0], 4, 1)
			for i := 0; i < h; i++ {
				row := c[(i0+i)*ldc+j0 : (i0+i)*ldc+j0+w]
				for j := range row {
					row[j] += t[4*i+j]
				}
			}
		}
	}
	if t != nil {
		edgeTiles.Put(t)
	}
	return true
}
