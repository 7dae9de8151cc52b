package gemm

// Packing copies blocks of op(a) and op(b) into the micro-panel layout the
// micro-kernels read. The transposing cases (op(a) not transposed, op(b)
// transposed) run AVX2 transpose kernels (pack_amd64.s) on whole 8-wide
// blocks where the CPU has AVX2, and a transposed a's micro-panels (6
// contiguous values per step) an SSE copy loop over all the full panels of
// a block, row by row of a. Pure-Go loops do the edges (l-outer where the
// rows of a micro-panel can be read together, so each step writes
// contiguous values) and everything on CPUs without AVX2 (which Sgemm
// sends to gonum anyway). The full panels skip the multiply by alpha when
// it is 1.

// packA copies alpha·op(a)[ic:ic+mc, pc:pc+kc] into dst as micro-panels of
// mr rows, each stored k-major (dst[p*mr*kc + l*mr + i]), zero-padding the
// last panel to mr rows.
func packA(trans bool, a []float32, lda, ic, pc, mc, kc, mr int, alpha float32, dst []float32) {
	if kc == 0 {
		return
	}
	ir := 0
	if trans && mr == 6 && packAsm && mc >= 6 {
		// All full micro-panels at once, each row of a read once.
		np := mc / 6
		_ = a[(pc+kc-1)*lda+ic+6*np-1] // all kc rows lie in a
		_ = dst[6*np*kc-1]
		packA6TPanels(kc, np, &a[pc*lda+ic], lda, &dst[0], alpha)
		ir = 6 * np
	}
	for ; ir < mc; ir += mr {
		h := min(mr, mc-ir)
		p := dst[ir*kc : ir*kc+mr*kc]
		if h == 6 && mr == 6 && !trans {
			packARows6(a, (ic+ir)*lda+pc, lda, kc, alpha, p)
			continue
		}
		packAEdge(trans, a, lda, ic+ir, pc, h, kc, mr, alpha, p)
	}
}

// packARows6 packs the 6×kc block of a (not transposed) whose rows start
// at a[o], a[o+lda], … into the micro-panel p: p[l*6+i] = alpha·a[o+i*lda+l].
func packARows6(a []float32, o, lda, kc int, alpha float32, p []float32) {
	_ = a[o+5*lda+kc-1] // all six rows lie in a
	p = p[:6*kc]
	l := 0
	if packAsm && kc >= 8 {
		n8 := kc / 8
		if alpha == 1 {
			packA6(n8, &a[o], lda, &p[0])
		} else {
			packA6Scaled(n8, &a[o], lda, &p[0], alpha)
		}
		l = 8 * n8
	}
	r0 := a[o : o+kc]
	r1 := a[o+lda : o+lda+kc]
	r2 := a[o+2*lda : o+2*lda+kc]
	r3 := a[o+3*lda : o+3*lda+kc]
	r4 := a[o+4*lda : o+4*lda+kc]
	r5 := a[o+5*lda : o+5*lda+kc]
	for ; l < kc; l++ {
		d := (*[6]float32)(p[6*l:])
		if alpha == 1 {
			*d = [6]float32{r0[l], r1[l], r2[l], r3[l], r4[l], r5[l]}
			continue
		}
		*d = [6]float32{alpha * r0[l], alpha * r1[l], alpha * r2[l], alpha * r3[l], alpha * r4[l], alpha * r5[l]}
	}
}

// packAEdge packs one micro-panel of h ≤ mr rows starting at row r of
// op(a) into p (mr·kc values), zero-padding it to mr rows: the edges, and
// every panel of a transposed a without packA6TPanels.
func packAEdge(trans bool, a []float32, lda, r, pc, h, kc, mr int, alpha float32, p []float32) {
	if h < mr {
		clear(p)
	}
	if trans {
		// Column l of the panel is contiguous in a.
		for l := 0; l < kc; l++ {
			o := (pc+l)*lda + r
			d := p[l*mr : l*mr+h]
			for i, v := range a[o : o+h] {
				d[i] = alpha * v
			}
		}
		return
	}
	for i := 0; i < h; i++ {
		row := a[(r+i)*lda+pc : (r+i)*lda+pc+kc]
		for l, v := range row {
			p[l*mr+i] = alpha * v
		}
	}
}

// packB copies op(b)[pc:pc+kc, jc:jc+nc] into dst as micro-panels of nr
// columns, each stored k-major (dst[q*nr*kc + l*nr + j]), zero-padding the
// last panel to nr columns.
func packB(trans bool, b []float32, ldb, pc, jc, kc, nc, nr int, dst []float32) {
	if kc == 0 {
		return
	}
	if !trans && ldb >= farRow {
		packBRows(b, ldb, pc, jc, kc, nc, nr, dst)
		return
	}
	for jr := 0; jr < nc; jr += nr {
		w := min(nr, nc-jr)
		p := dst[jr*kc : jr*kc+nr*kc]
		if w < nr {
			clear(p)
		}
		if trans {
			packBCols(b, (jc+jr)*ldb+pc, ldb, kc, w, nr, p)
			continue
		}
		for l := 0; l < kc; l++ {
			o := (pc+l)*ldb + jc + jr
			copy(p[l*nr:l*nr+w], b[o:o+w])
		}
	}
}

// packBCols packs w ≤ nr rows of b, starting at b[o], b[o+ldb], …, as the
// first w columns of the kc×nr micro-panel p: p[l*nr+j] = b[o+j*ldb+l].
// Groups of 8 rows go through transpose8 (whole blocks of 8 steps of l)
// or an l-outer loop that writes 8 contiguous values per step.
func packBCols(b []float32, o, ldb, kc, w, nr int, p []float32) {
	_ = b[o+(w-1)*ldb+kc-1] // all w rows lie in b
	p = p[:(kc-1)*nr+w]
	j := 0
	for ; j+8 <= w; j += 8 {
		l := 0
		if packAsm && kc >= 8 {
			n8 := kc / 8
			transpose8(n8, &b[o+j*ldb], ldb, &p[j], nr)
			l = 8 * n8
		}
		r := o + j*ldb
		r0 := b[r : r+kc]
		r1 := b[r+ldb : r+ldb+kc]
		r2 := b[r+2*ldb : r+2*ldb+kc]
		r3 := b[r+3*ldb : r+3*ldb+kc]
		r4 := b[r+4*ldb : r+4*ldb+kc]
		r5 := b[r+5*ldb : r+5*ldb+kc]
		r6 := b[r+6*ldb : r+6*ldb+kc]
		r7 := b[r+7*ldb : r+7*ldb+kc]
		for ; l < kc; l++ {
			*(*[8]float32)(p[l*nr+j:]) = [8]float32{r0[l], r1[l], r2[l], r3[l], r4[l], r5[l], r6[l], r7[l]}
		}
	}
	for ; j < w; j++ {
		for l, v := range b[o+j*ldb : o+j*ldb+kc] {
			p[l*nr+j] = v
		}
	}
}

// packBRows is packB for an untransposed b whose rows lie far apart
// (farRow): row by row, each read whole across the nc columns, instead of
// panel by panel, which reads nr values from each of kc pages in turn.
func packBRows(b []float32, ldb, pc, jc, kc, nc, nr int, dst []float32) {
	if r := nc % nr; r != 0 {
		clear(dst[(nc-r)*kc : (nc-r)*kc+nr*kc])
	}
	for l := 0; l < kc; l++ {
		row := b[(pc+l)*ldb+jc:][:nc]
		for jr := 0; jr < nc; jr += nr {
			w := min(nr, nc-jr)
			copy(dst[jr*kc+l*nr:][:w], row[jr:jr+w])
		}
	}
}
