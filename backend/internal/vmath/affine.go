package vmath

// AffineRelu32 sets dst[i] = a·x[i] + b for i < len(dst), computed as Go
// computes the float32 expression a*x[i] + b on amd64 (the product
// rounded, then the sum), and with relu then max(·, 0) as Go's max gives
// it (NaN kept, −0 to +0). x must hold at least len(dst) elements. With
// AVX-512F it runs a vector kernel giving the same bits (NaN payloads
// aside: a NaN stays a NaN); elsewhere the scalar loop.
func AffineRelu32(dst, x []float32, a, b float32, relu bool) {
	x = x[:len(dst)]
	affineReluWith(active, dst, x, a, b, relu)
}

// affineReluGo is AffineRelu32's scalar loop.
func affineReluGo(dst, x []float32, a, b float32, relu bool) {
	x = x[:len(dst)]
	if relu {
		for i, v := range x {
			dst[i] = max(a*v+b, 0)
		}
		return
	}
	for i, v := range x {
		dst[i] = a*v + b
	}
}

// affineReluWith is AffineRelu32 with kernel k: whole 16-value vectors
// through the AVX-512 kernel, the rest through the scalar loop.
func affineReluWith(k kernel, dst, x []float32, a, b float32, relu bool) {
	n := 0
	if k.hasAffine() {
		n = len(dst) &^ 15
	}
	if n > 0 {
		r := 0
		if relu {
			r = 1
		}
		k.affineRelu(&dst[0], &x[0], n, a, b, r)
	}
	affineReluGo(dst[n:], x[n:], a, b, relu)
}
