package vmath

// PlusZero32 sets dst[i] = 0 + x[i] for i < len(dst), x holding at least
// len(dst) values: a copy in which −0 becomes +0, the gradient of a data
// movement as the float64 path's additions into zeros give it. With AVX2
// whole blocks of 16 are added to a vector of zeros (the same single
// IEEE addition per element, so the same bits as the Go loop).
func PlusZero32(dst, x []float32) {
	x = x[:len(dst)]
	n := 0
	if active != scalar {
		n = len(dst) &^ 15
		if n > 0 {
			plusZeroAVX2(&dst[0], &x[0], n)
		}
	}
	for i := n; i < len(dst); i++ {
		dst[i] = 0 + x[i]
	}
}
