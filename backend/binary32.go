package backend

// Float32 kernels of Add, Sub, Mul and Div without broadcasting, split
// over the cores: each element is the float32 operation itself, which
// gives the bits of the float64 formula rounded once (a float64 sum,
// difference, product or quotient of two float32 values rounded to
// float32 is correctly rounded: 53 ≥ 2·24 + 2), without the call through
// arith.f per element.

// arith32 writes a op c into dst for op Add, Sub, Mul or Div and reports
// whether it did.
func arith32(op string, dst, a, c []float32) bool {
	a, c = a[:len(dst)], c[:len(dst)]
	var f func(d, a, c []float32)
	switch op {
	case "Add":
		f = func(d, a, c []float32) {
			for i := range d {
				d[i] = a[i] + c[i]
			}
		}
	case "Sub":
		f = func(d, a, c []float32) {
			for i := range d {
				d[i] = a[i] - c[i]
			}
		}
	case "Mul":
		f = func(d, a, c []float32) {
			for i := range d {
				d[i] = a[i] * c[i]
			}
		}
	case "Div":
		f = func(d, a, c []float32) {
			for i := range d {
				d[i] = a[i] / c[i]
			}
		}
	default:
		return false
	}
	parallelElems(len(dst), func(lo, hi int) { f(dst[lo:hi], a[lo:hi], c[lo:hi]) })
	return true
}

// arithGrad32 writes into dst (any contents: every element is written)
// the gradient of input k of Add, Sub or Mul without broadcasting, as the
// general loop's dst[i] += g·∂ into a zeroed dst does (0 + v: a −0 term
// gives +0), and reports whether it did.
func arithGrad32(op string, k int, dst, a, c, g []float32) bool {
	g = g[:len(dst)]
	var f func(d, g, o []float32)
	var other []float32 // Mul's other operand
	switch {
	case op == "Add" || op == "Sub" && k == 0:
		f = func(d, g, _ []float32) {
			for i := range d {
				d[i] = 0 + g[i]
			}
		}
	case op == "Sub":
		f = func(d, g, _ []float32) {
			for i := range d {
				d[i] = 0 + -g[i]
			}
		}
	case op == "Mul":
		other = c[:len(dst)]
		if k == 1 {
			other = a[:len(dst)]
		}
		f = func(d, g, o []float32) {
			for i := range d {
				d[i] = 0 + g[i]*o[i]
			}
		}
	default:
		return false
	}
	parallelElems(len(dst), func(lo, hi int) {
		var o []float32
		if other != nil {
			o = other[lo:hi]
		}
		f(dst[lo:hi], g[lo:hi], o)
	})
	return true
}
