package vmath

// Deinterleave32Rows splits rows rows into their even and odd columns, as
// a stride-2 convolution's phase planes take them: row r of src (at
// src[r·ss:], ne+no values) gives even[r·es+i] = src[r·ss+2i] (ne values)
// and odd[r·os+i] = src[r·ss+2i+1] (no values), ne being no or no+1. With
// AVX2, blocks of 8 pairs move as two shuffles and two lane permutations;
// values are moved, never computed, so every bit (NaN payloads, −0) is
// kept. One call for a plane's rows saves a call per row where rows are
// short (16 values: one vector block).
func Deinterleave32Rows(even, odd, src []float32, rows, ne, no, es, os, ss int) {
	if rows <= 0 || ne == 0 {
		return
	}
	if d := ne - no; d < 0 || d > 1 {
		panic("vmath: Deinterleave32Rows: ne must be no or no+1")
	}
	// Bounds once for every row (the kernel reads and writes through
	// pointers).
	_, _, _ = even[(rows-1)*es+ne-1:], odd[(rows-1)*os:][:no], src[(rows-1)*ss+ne+no-1]
	n := 0
	if active != scalar && no >= 8 {
		n = no &^ 7
		deinterleaveRowsAVX2(&even[0], &odd[0], &src[0], rows, n, es, os, ss)
	}
	if n == ne {
		return
	}
	for r := 0; r < rows; r++ {
		e, o, s := even[r*es:][:ne], odd[r*os:][:no], src[r*ss:][:ne+no]
		for i := n; i < no; i++ {
			e[i], o[i] = s[2*i], s[2*i+1]
		}
		if ne > no {
			e[no] = s[2*no]
		}
	}
}

// Interleave32Rows is the inverse of Deinterleave32Rows: row r of dst
// (at dst[r·ds:], ne+no values, no more written) gets dst[2i] from
// even[r·es+i] and dst[2i+1] from odd[r·os+i].
func Interleave32Rows(dst, even, odd []float32, rows, ne, no, ds, es, os int) {
	if rows <= 0 || ne == 0 {
		return
	}
	if d := ne - no; d < 0 || d > 1 {
		panic("vmath: Interleave32Rows: ne must be no or no+1")
	}
	_, _, _ = dst[(rows-1)*ds+ne+no-1], even[(rows-1)*es+ne-1:], odd[(rows-1)*os:][:no]
	n := 0
	if active != scalar && no >= 8 {
		n = no &^ 7
		interleaveRowsAVX2(&dst[0], &even[0], &odd[0], rows, n, ds, es, os)
	}
	if n == ne {
		return
	}
	for r := 0; r < rows; r++ {
		d, e, o := dst[r*ds:][:ne+no], even[r*es:][:ne], odd[r*os:][:no]
		for i := n; i < no; i++ {
			d[2*i], d[2*i+1] = e[i], o[i]
		}
		if ne > no {
			d[2*no] = e[no]
		}
	}
}
