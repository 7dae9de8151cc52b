package gemm

import "fmt"

// SgemmRows sets c = a·B (m×n, row stride ldc) for the k×n matrix B
// whose row l is b[boff[l]:][:n]: rows anywhere in b, which may overlap
// (the tap rows of a convolution of stride 1 are shifted windows of one
// input). The micro-kernel reads them in place, a last partial panel of
// columns too where each of its rows has a whole panel's width (nr
// values) within b, the extra columns' results dropped; otherwise that
// panel is packed. Each element of c is the sum Sgemm forms for
// a with those rows gathered into a matrix (one chain of FMAs per block of
// blockK rows of B, the blocks added in order), so the results are the
// same bits. It returns false, doing nothing, where the kernel has no such
// variant (the caller then gathers the rows and calls Sgemm); it panics
// when a row or a slice is out of range.
func SgemmRows(m, n, k int, a []float32, lda int, b []float32, boff []int, c []float32, ldc int) bool {
	if !Accelerated() || active.rows == nil {
		return false
	}
	if m < 0 || n < 0 || k < 0 || len(boff) < k || lda < max(1, k) || ldc < max(1, n) {
		panic(fmt.Sprintf("gemm: SgemmRows: m=%d n=%d k=%d lda=%d ldc=%d with %d row offsets", m, n, k, lda, ldc, len(boff)))
	}
	if m == 0 || n == 0 {
		return true
	}
	if (k > 0 && len(a) < (m-1)*lda+k) || len(c) < (m-1)*ldc+n {
		panic(fmt.Sprintf("gemm: SgemmRows: len(a) = %d, len(c) = %d too short", len(a), len(c)))
	}
	for _, o := range boff[:k] {
		if o < 0 || o+n > len(b) {
			panic(fmt.Sprintf("gemm: SgemmRows: row of b at %d (n=%d) outside len(b) = %d", o, n, len(b)))
		}
	}
	if k == 0 {
		scale(m, n, 0, c, ldc)
		return true
	}
	rowsBlocked(active, m, n, k, a, lda, b, boff, c, ldc)
	return true
}

// rowsBlocked is blocked for SgemmRows (alpha 1, c written over): a
// packed, b's whole panels read in place through the row offsets.
func rowsBlocked(kr *kernel, m, n, k int, a []float32, lda int, b []float32, boff []int, c []float32, ldc int) {
	mr, nr := kr.mr, kr.nr
	pa := poolA.Get()
	defer poolA.Put(pa)
	pb := poolB.Get()
	defer poolB.Put(pb)
	bufA, bufB := *pa, *pb
	tile := bufA[blockM*blockK:][:tileLen]
	pfc := 0
	if ldc >= farRow {
		pfc = kr.farC
	}
	wide := useWide && kr.rows2 != nil
	for jc := 0; jc < n; jc += blockN {
		nc := min(blockN, n-jc)
		for pc := 0; pc < k; pc += blockK {
			kc := min(blockK, k-pc)
			offs := boff[pc : pc+kc]
			ov := 0
			if pc == 0 {
				ov = 1 // the first block writes c
			}
			ovc := ov | pfc
			// The last, partial panel is read in place too where every row
			// has nr values from its start within b (the caller's rows
			// lie inside a longer input), packed otherwise.
			r := nc % nr
			packed := r != 0 && maxOff(offs)+jc+nc-r+nr > len(b)
			if packed {
				packRows(b, offs, jc+nc-r, r, nr, bufB[(nc-r)*kc:])
			}
			for ic := 0; ic < m; ic += blockM {
				mc := min(blockM, m-ic)
				packA(false, a, lda, ic, pc, mc, kc, mr, 1, bufA)
				for jr := 0; jr < nc; jr += nr {
					w := min(nr, nc-jr)
					for ir := 0; ir < mc; ir += mr {
						h := min(mr, mc-ir)
						ci := (ic+ir)*ldc + jc + jr
						if wide && w == nr && ir+2*mr <= mc {
							kr.rows2(kc, &bufA[ir*kc], &b[jc+jr], &c[ci], ldc, &offs[0], ovc)
							ir += mr
							continue
						}
						full := h == mr && w == nr
						t := tile[:mr*nr]
						dst, ld, o := &t[0], nr, 1
						if full {
							dst, ld, o = &c[ci], ldc, ovc
						}
						if w == nr || !packed {
							kr.rows(kc, &bufA[ir*kc], &b[jc+jr], dst, ld, &offs[0], o)
						} else {
							kr.fn(kc, &bufA[ir*kc], &bufB[jr*kc], dst, ld, o)
						}
						if full {
							continue
						}
						for i := 0; i < h; i++ {
							row := c[ci+i*ldc : ci+i*ldc+w]
							if ov == 1 {
								copy(row, t[i*nr:i*nr+w])
								continue
							}
							for j, v := range t[i*nr : i*nr+w] {
								row[j] += v
							}
						}
					}
				}
			}
		}
	}
}

// packRows packs columns [j0, j0+w) (w < nr) of the rows of b at offs
// as one kc×nr micro-panel p, zero-padded to nr columns.
func packRows(b []float32, offs []int, j0, w, nr int, p []float32) {
	p = p[:len(offs)*nr]
	for l, o := range offs {
		q := p[l*nr : (l+1)*nr]
		copy(q, b[o+j0:o+j0+w])
		clear(q[w:])
	}
}

// maxOff is the largest of offs (not empty).
func maxOff(offs []int) int {
	m := offs[0]
	for _, o := range offs[1:] {
		m = max(m, o)
	}
	return m
}
