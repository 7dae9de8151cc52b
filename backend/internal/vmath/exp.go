package vmath

import "math"

// Exp64 sets dst[i] = math.Exp(x[i]) for i < len(dst), bit for bit; x
// must hold at least len(dst) elements. dst and x may be the same slice
// (in place), but must not overlap otherwise.
//
// On amd64 with AVX2 and FMA (AVX-512F where present) whole vectors run a
// kernel that repeats math.Exp's own amd64 FMA algorithm lane by lane,
// its branches on the exponent (overflow, the subnormal path, underflow)
// included, so every result has math.Exp's bits: ±0, subnormal inputs
// and results, ±Inf and NaNs (returned with their payload, as math.Exp
// does) included. The tail of fewer than one vector, and every element
// elsewhere, runs math.Exp itself. The kernels neither read nor change
// MXCSR; like math.Exp they assume the default rounding (to nearest,
// subnormals kept).
func Exp64(dst, x []float64) {
	x = x[:len(dst)]
	expWith(active, dst, x)
}

// expWith is Exp64 with kernel k: whole vectors in the kernel, the tail
// by math.Exp.
func expWith(k kernel, dst, x []float64) {
	n := 0
	if w := k.width(); w > 0 {
		n = len(dst) &^ (w - 1)
		if n > 0 {
			k.exp(&dst[0], &x[0], n)
		}
	}
	for i := n; i < len(dst); i++ {
		dst[i] = math.Exp(x[i])
	}
}
