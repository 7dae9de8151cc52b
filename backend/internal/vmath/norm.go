package vmath

import "math"

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

// NormSums8 adds to mg[e] the values float64(g[e·S+j]) and to mgx[e] the
// products float64(g[e·S+j])·x̂ with x̂ = (float64(x[e·S+j]) − mu[e])·inv[e],
// j = 0…S−1 in order, for the eight instances e of S values at x and g:
// the sums of an instance normalisation's input gradient, eight
// instances' chains at a time, each in its own order. The AVX-512 kernel
// moves the instances' values into lanes (an 8×8 transpose) and repeats
// the operations lane by lane: the Go loop's bits.
func NormSums8(x, g []float32, S int, mu, inv, mg, mgx *[8]float64) {
	normSums8With(active, x, g, S, mu, inv, mg, mgx)
}

func normSums8With(k kernel, x, g []float32, S int, mu, inv, mg, mgx *[8]float64) {
	x, g = x[:8*S], g[:8*S]
	n := 0
	if k.hasSums() && S >= 8 {
		n = S &^ 7
		normSums8AVX512(&x[0], &g[0], S, n, mu, inv, mg, mgx)
	}
	for e := range 8 {
		a, b := mg[e], mgx[e]
		xe, ge := x[e*S+n:(e+1)*S], g[e*S+n:(e+1)*S]
		for j, v := range xe {
			xh := (float64(v) - mu[e]) * inv[e]
			a += float64(ge[j])
			b += float64(ge[j]) * xh
		}
		mg[e], mgx[e] = a, b
	}
}

// Stats8 sets mu[e] and inv[e] to the mean and 1/√(σ²+eps) of instance e
// of the eight instances of S values at x (S > 0): the sum
// Σ float64(x[e·S+j]) then the sum of squared deviations
// Σ (float64(x[e·S+j]) − mu[e])², j = 0…S−1 in order, each divided by S
// (the biased variance). The AVX-512 kernel moves the instances' values
// into lanes (an 8×8 transpose) and repeats the operations lane by lane:
// the Go loop's bits.
func Stats8(x []float32, S int, eps float64, mu, inv *[8]float64) {
	stats8With(active, x, S, eps, mu, inv)
}

func stats8With(k kernel, x []float32, S int, eps float64, mu, inv *[8]float64) {
	x = x[:8*S]
	n := 0
	if k.hasSums() && S >= 8 {
		n = S &^ 7
	}
	var s, v [8]float64
	if n > 0 {
		sums8AVX512(&x[0], S, n, &s, nil)
	}
	fs := float64(S)
	for e := range 8 {
		a := s[e]
		for _, w := range x[e*S+n : (e+1)*S] {
			a += float64(w)
		}
		mu[e] = a / fs
	}
	if n > 0 {
		sums8AVX512(&x[0], S, n, &v, mu)
	}
	for e := range 8 {
		a := v[e]
		for _, w := range x[e*S+n : (e+1)*S] {
			d := float64(w) - mu[e]
			a += d * d
		}
		inv[e] = 1 / math.Sqrt(a/fs+eps)
	}
}

// AddRuns8 adds to acc[e] the values float64(g[e·S+j]), j = 0…S−1 in
// order, for the eight consecutive runs e of S values at g: eight
// channels' sums (a bias's gradient over planes), each chain in its own
// order. The AVX-512 kernel (Stats8's first pass) gives the Go loop's
// bits.
func AddRuns8(acc *[8]float64, g []float32, S int) { addRuns8With(active, acc, g, S) }

func addRuns8With(k kernel, acc *[8]float64, g []float32, S int) {
	g = g[:8*S]
	n := 0
	if k.hasSums() && S >= 8 {
		n = S &^ 7
		sums8AVX512(&g[0], S, n, acc, nil)
	}
	for e := range 8 {
		a := acc[e]
		for _, v := range g[e*S+n : (e+1)*S] {
			a += float64(v)
		}
		acc[e] = a
	}
}

// AddProdRuns8 adds to acc[e] the products float64(g[e·S+j])·float64(o[e·S+j])
// (a channel scale's gradient over planes) or, with mu and inv not nil,
// float64(g[e·S+j])·(float64(o[e·S+j]) − mu[e])·inv[e] (an instance
// normalisation's scale gradient), j = 0…S−1 in order, for the eight
// consecutive runs e of S values at g and o, each chain in its own order.
// The AVX-512 kernel moves the runs' values into lanes (an 8×8
// transpose) and repeats the operations lane by lane: the Go loops' bits.
func AddProdRuns8(acc *[8]float64, g, o []float32, S int, mu, inv *[8]float64) {
	addProdRuns8With(active, acc, g, o, S, mu, inv)
}

func addProdRuns8With(k kernel, acc *[8]float64, g, o []float32, S int, mu, inv *[8]float64) {
	g, o = g[:8*S], o[:8*S]
	n := 0
	if k.hasSums() && S >= 8 {
		n = S &^ 7
		prodSums8AVX512(&g[0], &o[0], S, n, acc, mu, inv)
	}
	for e := range 8 {
		a := acc[e]
		ge, oe := g[e*S+n:(e+1)*S], o[e*S+n:(e+1)*S]
		if mu == nil {
			for j, v := range ge {
				a += float64(v) * float64(oe[j])
			}
		} else {
			for j, v := range ge {
				a += float64(v) * (float64(oe[j]) - mu[e]) * inv[e]
			}
		}
		acc[e] = a
	}
}
