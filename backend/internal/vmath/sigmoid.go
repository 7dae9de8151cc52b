// Package vmath holds vectorised element-wise math kernels for the
// backend, each giving exactly the bits of the backend's scalar formula:
// Sigmoid32 those of the float64 formula rounded once to float32, Exp64
// those of math.Exp.
package vmath

import "math"

// Sigmoid32 sets dst[i] = float32(σ(float64(x[i]))) for i < len(dst), with
// σ computed as the backend's sigmoid64 does: 1/(1+exp(−x)) for x ≥ 0 and
// e/(1+e), e = exp(x), elsewhere, with math.Exp. x must hold at least
// len(dst) elements.
//
// On amd64 with AVX2 and FMA (AVX-512F where present) it runs a vector
// kernel that repeats math.Exp's own amd64 FMA algorithm lane by lane, so
// the results are bit-identical to the scalar formula (NaN payloads
// included; checked on all 2^32 float32 inputs, and on a dense sample by
// every test run, which would catch a Go release that changes math.Exp);
// elsewhere it runs the scalar formula.
func Sigmoid32(dst, x []float32) {
	x = x[:len(dst)]
	sigmoidWith(active, dst, x)
}

// sigmoid64 is the backend's float64 formula (backend.sigmoid64).
func sigmoid64(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// sigmoidGo is Sigmoid32's scalar loop.
func sigmoidGo(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = float32(sigmoid64(float64(v)))
	}
}

// sigmoidWith is Sigmoid32 with kernel k: whole vectors in place, the
// tail through a zero-padded buffer of one vector.
func sigmoidWith(k kernel, dst, x []float32) {
	w := k.width()
	if w == 0 {
		sigmoidGo(dst, x)
		return
	}
	n := len(dst) &^ (w - 1)
	if n > 0 {
		k.sigmoid(&dst[0], &x[0], n)
	}
	if n < len(dst) {
		var in, out [maxWidth]float32
		copy(in[:], x[n:])
		k.sigmoid(&out[0], &in[0], w)
		copy(dst[n:], out[:])
	}
}
