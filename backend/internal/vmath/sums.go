package vmath

// AddTo64 sets acc[i] += float64(g[i]) for i < len(acc), g holding at
// least len(acc) values: a row of a bias's or a LayerNorm shift's
// gradient, summed in float64. Each element is one IEEE addition, so the
// AVX-512 kernel that runs the whole vectors gives the Go loop's bits.
func AddTo64(acc []float64, g []float32) { addToWith(active, acc, g) }

func addToWith(k kernel, acc []float64, g []float32) {
	g = g[:len(acc)]
	n := 0
	if k.hasSums() {
		n = len(acc) &^ 7
		if n > 0 {
			addTo64AVX512(&acc[0], &g[0], n)
		}
	}
	for i := n; i < len(acc); i++ {
		acc[i] += float64(g[i])
	}
}

// AddNormTo64 sets acc[i] += float64(g[i])·(float64(x[i]) − mu)·inv for
// i < len(acc), the products and the sum in that order: a row of a
// LayerNorm scale's gradient. The AVX-512 kernel that runs the whole
// vectors repeats the operations lane by lane: the Go loop's bits. g and x
// hold at least len(acc) values.
func AddNormTo64(acc []float64, g, x []float32, mu, inv float64) {
	addNormToWith(active, acc, g, x, mu, inv)
}

func addNormToWith(k kernel, acc []float64, g, x []float32, mu, inv float64) {
	g, x = g[:len(acc)], x[:len(acc)]
	n := 0
	if k.hasSums() {
		n = len(acc) &^ 7
		if n > 0 {
			addNormTo64AVX512(&acc[0], &g[0], &x[0], n, mu, inv)
		}
	}
	for i := n; i < len(acc); i++ {
		acc[i] += float64(g[i]) * (float64(x[i]) - mu) * inv
	}
}
