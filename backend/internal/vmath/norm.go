package vmath

// NormRow32 sets dst[i] = float32(s·(float64(x[i]) − mu)·inv + b) for
// i < len(dst), the operations in that order, each rounded to float64 (Go
// does not fuse them on amd64): a row of an instance normalisation's
// output. x holds at least len(dst) values. The AVX-512 kernel repeats the
// operations lane by lane: the Go loop's bits.
func NormRow32(dst, x []float32, mu, inv, s, b float64) { normRowWith(active, dst, x, mu, inv, s, b) }

func normRowWith(k kernel, dst, x []float32, mu, inv, s, b float64) {
	x = x[:len(dst)]
	n := 0
	if k.hasSums() {
		n = len(dst) &^ 7
		if n > 0 {
			normRowAVX512(&dst[0], &x[0], n, mu, inv, s, b)
		}
	}
	for i := n; i < len(dst); i++ {
		dst[i] = float32(s*(float64(x[i])-mu)*inv + b)
	}
}

// NormGradRow32 sets dst[i] = float32(si·(float64(g[i]) − m − x̂·mx)) with
// x̂ = (float64(x[i]) − mu)·inv for i < len(dst), the operations in that
// order, each rounded to float64: a row of an instance normalisation's
// input gradient. x and g hold at least len(dst) values. The AVX-512
// kernel repeats the operations lane by lane: the Go loop's bits.
func NormGradRow32(dst, x, g []float32, mu, inv, m, mx, si float64) {
	normGradRowWith(active, dst, x, g, mu, inv, m, mx, si)
}

func normGradRowWith(k kernel, dst, x, g []float32, mu, inv, m, mx, si float64) {
	x, g = x[:len(dst)], g[:len(dst)]
	n := 0
	if k.hasSums() {
		n = len(dst) &^ 7
		if n > 0 {
			normGradRowAVX512(&dst[0], &x[0], &g[0], n, mu, inv, m, mx, si)
		}
	}
	for i := n; i < len(dst); i++ {
		xh := (float64(x[i]) - mu) * inv
		dst[i] = float32(si * (float64(g[i]) - m - xh*mx))
	}
}

// ReluGrad32 sets dst[i] = g[i]·1 where y[i] > 0 and g[i]·0 elsewhere (y
// NaN included) for i < len(dst): ReLU's gradient from its output, a
// product so that an infinite or NaN g stays NaN where the unit is off.
// y and g hold at least len(dst) values. The AVX-512 kernel multiplies by
// the same factors: the Go loop's bits.
func ReluGrad32(dst, y, g []float32) { reluGradWith(active, dst, y, g) }

func reluGradWith(k kernel, dst, y, g []float32) {
	y, g = y[:len(dst)], g[:len(dst)]
	n := 0
	if k.hasSums() {
		n = len(dst) &^ 15
		if n > 0 {
			reluGradAVX512(&dst[0], &y[0], &g[0], n)
		}
	}
	for i := n; i < len(dst); i++ {
		f := float32(0)
		if y[i] > 0 {
			f = 1
		}
		dst[i] = g[i] * f
	}
}
