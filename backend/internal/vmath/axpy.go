package vmath

// Axpy32 sets y[i] += a·x[i] for i < len(y); x must hold at least len(y)
// values. With AVX2 and FMA, whole blocks of 16 run as fused
// multiply-adds (one rounding per element instead of two): the depthwise
// convolutions' taps, tolerance-checked against the im2col products, not
// bit-matched.
func Axpy32(a float32, x, y []float32) {
	x = x[:len(y)]
	n := 0
	if active != scalar {
		n = len(y) &^ 15
		if n > 0 {
			axpyAVX2(a, &x[0], &y[0], n)
		}
	}
	for i := n; i < len(y); i++ {
		y[i] += a * x[i]
	}
}

// Dot32 returns Σ x[i]·y[i] over i < len(x), in float32; y must hold at
// least len(x) values. With AVX2 and FMA whole blocks of 16 accumulate in
// 16 partial sums added at the end, then the tail in order.
func Dot32(x, y []float32) float32 {
	y = y[:len(x)]
	n := 0
	var s float32
	if active != scalar {
		n = len(x) &^ 15
		if n > 0 {
			s = dotAVX2(&x[0], &y[0], n)
		}
	}
	for i := n; i < len(x); i++ {
		s += x[i] * y[i]
	}
	return s
}
