package vmath

// Deinterleave32 sets even[i] = src[2i] and odd[i] = src[2i+1]: the even
// and odd columns of a row, as a stride-2 convolution's phase planes take
// them. len(even) is len(odd) or len(odd)+1, and src holds at least
// len(even)+len(odd) values. With AVX2, blocks of 8 pairs move as two
// shuffles and two lane permutations; values are moved, never computed,
// so every bit (NaN payloads, −0) is kept.
func Deinterleave32(even, odd, src []float32) {
	if d := len(even) - len(odd); d < 0 || d > 1 {
		panic("vmath: Deinterleave32: len(even) must be len(odd) or len(odd)+1")
	}
	src = src[:len(even)+len(odd)]
	n := 0
	if active != scalar {
		n = len(odd) &^ 7
		if n > 0 {
			deinterleaveAVX2(&even[0], &odd[0], &src[0], n)
		}
	}
	for i := n; i < len(odd); i++ {
		even[i], odd[i] = src[2*i], src[2*i+1]
	}
	if len(even) > len(odd) {
		even[len(odd)] = src[2*len(odd)]
	}
}

// Interleave32 sets dst[2i] = even[i] and dst[2i+1] = odd[i], the inverse
// of Deinterleave32: len(even) is len(odd) or len(odd)+1, and dst holds at
// least len(even)+len(odd) values (no more are written).
func Interleave32(dst, even, odd []float32) {
	if d := len(even) - len(odd); d < 0 || d > 1 {
		panic("vmath: Interleave32: len(even) must be len(odd) or len(odd)+1")
	}
	dst = dst[:len(even)+len(odd)]
	n := 0
	if active != scalar {
		n = len(odd) &^ 7
		if n > 0 {
			interleaveAVX2(&dst[0], &even[0], &odd[0], n)
		}
	}
	for i := n; i < len(odd); i++ {
		dst[2*i], dst[2*i+1] = even[i], odd[i]
	}
	if len(even) > len(odd) {
		dst[2*len(odd)] = even[len(odd)]
	}
}

// Deinterleave32Rows is Deinterleave32 on rows rows at once: row r splits
// src[r·ss:] into even[r·es:] (ne values) and odd[r·os:] (no values),
// ne being no or no+1. One call for a plane's rows saves a call per row
// where rows are short (16 values: one vector block).
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

// Interleave32Rows is Interleave32 on rows rows at once: row r writes
// dst[r·ds:] (ne+no values) from even[r·es:] and odd[r·os:].
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
