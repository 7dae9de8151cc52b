package stepvec

// Finite reports whether every value of x is finite.
func Finite(x []float32) bool { return finite(vector, x) }

func finite(vec bool, x []float32) bool {
	k := vectorPart(vec, len(x))
	if k > 0 && !finiteAVX512(&x[0], k) {
		return false
	}
	return finiteGo(x[k:])
}

// finiteGo is Finite's Go loop: v·0 is 0 for a finite v and NaN for ±Inf
// and NaN, and a NaN stays in the sum, so the pass has no branch per
// value.
func finiteGo(x []float32) bool {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * 0
		s1 += x[i+1] * 0
		s2 += x[i+2] * 0
		s3 += x[i+3] * 0
	}
	for ; i < len(x); i++ {
		s0 += x[i] * 0
	}
	s := s0 + s1 + s2 + s3
	return s == s
}
