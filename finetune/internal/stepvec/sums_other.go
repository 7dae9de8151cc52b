//go:build !amd64

package stepvec

// scaleSumsAVX512 is never called outside amd64.
func scaleSumsAVX512(prop, metric, v *float32, n int, lane *[16]float64) {
	panic("stepvec: no vector kernel")
}

// deltaDotAVX512 is never called outside amd64.
func deltaDotAVX512(grad, before, after *float32, n int, lane *[8]float64) {
	panic("stepvec: no vector kernel")
}
