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
