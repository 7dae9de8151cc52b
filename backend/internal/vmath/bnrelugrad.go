package vmath

import "math"

// BNReluGradRow32 runs one row of the fused BatchNorm+Relu gradient
// (backend/internal/kernels' BatchNormReluGrads): with g_k = gy_k·[a·x_k + cf > 0] (the
// Relu's factor 1 or 0 multiplied in, so that an infinite or NaN gy times
// 0 gives NaN), it writes d_k = a·g_k + b when d is not nil (len(x)) and
// returns Σ g_k·(x_k − m) and Σ g_k, each summed as four partial sums
// (element k into partial k mod 4) added as (s0+s1)+(s2+s3), then the
// tail in order; every product rounded, then every sum (Go's float32
// arithmetic on amd64). gy must hold at least len(x) elements. With AVX
// the whole groups of four run as one 4-lane vector each, the same
// operations in the same order; elsewhere the scalar loop.
func BNReluGradRow32(x, gy, d []float32, a, cf, b, m float32) (sx, sg float32) {
	return bnReluGradRowWith(active, x, gy, d, a, cf, b, m)
}

// bnReluGradRowWith is BNReluGradRow32 with kernel k.
func bnReluGradRowWith(k kernel, x, gy, d []float32, a, cf, b, m float32) (sx, sg float32) {
	gy = gy[:len(x)]
	if d != nil {
		d = d[:len(x)]
	}
	n := len(x) &^ 3
	if k == scalar || n == 0 {
		return bnReluGradRowGo(x, gy, d, a, cf, b, m)
	}
	var dp *float32
	if d != nil {
		dp = &d[0]
	}
	sx, sg = bnReluGradRow4(&x[0], &gy[0], dp, n, a, cf, b, m)
	return bnReluGradTail(x, gy, d, a, cf, b, m, n, sx, sg)
}

// bnReluGradTail runs BNReluGradRow32's elements from k on, one by one,
// onto the sums sx and sg.
func bnReluGradTail(x, gy, d []float32, a, cf, b, m float32, k int, sx, sg float32) (float32, float32) {
	for ; k < len(x); k++ {
		v := gy[k] * reluFactor(a, x[k], cf)
		if d != nil {
			d[k] = a*v + b
		}
		sx += v * (x[k] - m)
		sg += v
	}
	return sx, sg
}

// bnReluGradRowGo is BNReluGradRow32's scalar loop.
func bnReluGradRowGo(x, gy, d []float32, a, cf, b, m float32) (sx, sg float32) {
	var s0, s1, s2, s3, g0, g1, g2, g3 float32
	k := 0
	for ; k+4 <= len(x); k += 4 {
		xv := x[k : k+4 : k+4]
		v0 := gy[k] * reluFactor(a, xv[0], cf)
		v1 := gy[k+1] * reluFactor(a, xv[1], cf)
		v2 := gy[k+2] * reluFactor(a, xv[2], cf)
		v3 := gy[k+3] * reluFactor(a, xv[3], cf)
		if d != nil {
			dd := d[k : k+4 : k+4]
			dd[0] = a*v0 + b
			dd[1] = a*v1 + b
			dd[2] = a*v2 + b
			dd[3] = a*v3 + b
		}
		s0 += v0 * (xv[0] - m)
		s1 += v1 * (xv[1] - m)
		s2 += v2 * (xv[2] - m)
		s3 += v3 * (xv[3] - m)
		g0 += v0
		g1 += v1
		g2 += v2
		g3 += v3
	}
	return bnReluGradTail(x, gy, d, a, cf, b, m, k, (s0+s1)+(s2+s3), (g0+g1)+(g2+g3))
}

// reluFactor is 1 where a·x + cf > 0, else 0.
func reluFactor(a, x, cf float32) float32 {
	one := uint32(0)
	if a*x+cf > 0 {
		one = 0x3f800000
	}
	return math.Float32frombits(one)
}
