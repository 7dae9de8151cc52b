package png

import "fmt"

// Drift returns ‖θ − θ₀‖², the squared L2 distance of the parameters from
// their values θ₀ at the start of the run (L2-SP), accumulated in float64.
// Its gradient is 2(θ − θ₀) (see OutsideSpan). Drift panics when the
// lengths differ.
func Drift(theta, theta0 []float32) float64 {
	if len(theta) != len(theta0) {
		panic(fmt.Sprintf("png: Drift: len(theta) = %d, len(theta0) = %d, want equal", len(theta), len(theta0)))
	}
	var s float64
	for j, x := range theta {
		d := float64(x) - float64(theta0[j])
		s += d * d
	}
	return s
}

// OutsideSpan writes into dst (n values) the part of ∇F that is not a
// combination of the task gradients, Gradient.Extra of the general form:
//
//	dst = Σ_s c_s·∇t_s + cd·2(θ − θ₀)
//
// for term gradients T (t×n, row s is ∇t_s, c their coefficients ∂F/∂t_s)
// and the drift coefficient cd = ∂F/∂drift (theta0 nil: no drift). Each
// element is accumulated in float64 and rounded once. It reads only the
// rows with a nonzero coefficient and reports false, leaving dst alone,
// when every coefficient is zero: the caller then passes a nil Extra and
// the step stays in the span of J. OutsideSpan panics when the shapes do
// not agree.
func OutsideSpan(dst []float32, T Jacobian, c []float64, cd float64, theta, theta0 []float32) bool {
	checkJacobian(T)
	n := len(dst)
	if len(c) != T.M || (T.M > 0 && T.N != n) || (theta0 != nil && (len(theta) != n || len(theta0) != n)) {
		panic(fmt.Sprintf("png: OutsideSpan: len(dst) = %d, terms %d×%d with %d coefficients, len(theta) = %d, len(theta0) = %d",
			n, T.M, T.N, len(c), len(theta), len(theta0)))
	}
	rows := make([]int, 0, T.M)
	for s, v := range c {
		if v != 0 {
			rows = append(rows, s)
		}
	}
	if theta0 == nil {
		cd = 0
	}
	if len(rows) == 0 && cd == 0 {
		return false
	}
	for j := range dst {
		var v float64
		if cd != 0 {
			v = 2 * cd * (float64(theta[j]) - float64(theta0[j]))
		}
		for _, s := range rows {
			v += c[s] * float64(T.Data[s*n+j])
		}
		dst[j] = float32(v)
	}
	return true
}
