package gemm

import "fmt"

// Segs is the layout of SdotRowsSeg's rows: each row is Items items of N
// segments of K values; segment s of item t starts t·IA + s·SA values
// after its row's start in a, t·IB + s·SB in b. Items 0 counts as one.
type Segs struct {
	K, N, Items    int
	SA, SB, IA, IB int
}

// SdotRowsSeg adds a·bᵀ to c (m×n, row stride ldc) for rows laid out as
// l says: row i of a starts at a[i·lda], row j of b at b[boff[j]]. A
// convolution's weight gradient of stride 1 is such a product: the output
// gradient's rows of oW values (SA = oW) against each tap's rows of the
// input (SB = W), read in place, without spreading the output gradient to
// rows of width W; the samples of a batch are its items (IA and IB their
// strides), summed in one pass of the kernel, which reduces its lanes once
// per block instead of once per sample. It returns false, doing nothing,
// when the CPU has no such kernel (the caller then spreads the rows and
// calls SdotRows); it panics when a row lies outside its slice. Its loop
// is dotTiles' with kr.dotSeg, written out: through dotTiles (a row-offset
// function and a choice of kernel per tile) the LeNet fixture's weight
// gradient took 5% longer (BenchmarkConvWideRows/lenet2/dw/inplace, one
// thread).
func SdotRowsSeg(m, n int, l Segs, a []float32, lda int, b []float32, boff []int, c []float32, ldc int) bool {
	if !Accelerated() || active.dotSeg == nil {
		return false
	}
	k, nseg, items := l.K, l.N, max(l.Items, 1)
	if m < 0 || n < 0 || k < 1 || nseg < 0 || l.SA < 0 || l.SB < 0 || l.IA < 0 || l.IB < 0 || len(boff) < n || lda < 0 || ldc < n {
		panic(fmt.Sprintf("gemm: SdotRowsSeg: m=%d n=%d %+v lda=%d ldc=%d with %d row offsets", m, n, l, lda, ldc, len(boff)))
	}
	if m == 0 || n == 0 || nseg == 0 {
		return true
	}
	span := func(s, i int) int { return (items-1)*i + (nseg-1)*s + k } // values a row's segments reach
	if len(a) < (m-1)*lda+span(l.SA, l.IA) || len(c) < (m-1)*ldc+n {
		panic(fmt.Sprintf("gemm: SdotRowsSeg: len(a) = %d, len(c) = %d too short", len(a), len(c)))
	}
	for _, o := range boff[:n] {
		if o < 0 || o+span(l.SB, l.IB) > len(b) {
			panic(fmt.Sprintf("gemm: SdotRowsSeg: row of b at %d (%+v) outside len(b) = %d", o, l, len(b)))
		}
	}
	sa, sb, ia, ib := l.SA, l.SB, l.IA, l.IB
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
				kr.dotSeg(k, nseg, sa, sb, &a[ar[0]], &a[ar[1]], &a[ar[2]], &b[br[0]], &b[br[1]], &b[br[2]], &b[br[3]], &c[i0*ldc+j0], ldc, 1, items, ia, ib)
				continue
			}
			// An edge block repeats its last row; its duplicate results
			// are dropped.
			if t == nil {
				t = edgeTiles.Get().(*[12]float32)
			}
			*t = [12]float32{}
			kr.dotSeg(k, nseg, sa, sb, &a[ar[0]], &a[ar[1]], &a[ar[2]], &b[br[0]], &b[br[1]], &b[br[2]], &b[br[3]], &t[0], 4, 1, items, ia, ib)
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
