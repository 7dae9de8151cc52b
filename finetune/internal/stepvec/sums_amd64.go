package stepvec

// scaleSumsAVX512 is ScaleSums's kernel on the first n elements, n a
// multiple of 8 (metric nil for 1): the 8 lanes' sums of the numerator
// in lane[:8], of the denominator in lane[8:].
//
//go:noescape
func scaleSumsAVX512(prop, metric, v *float32, n int, lane *[16]float64)

// deltaDotAVX512 is DeltaDot's kernel on the first n elements, n a
// multiple of 8: the 8 lanes' sums in lane.
//
//go:noescape
func deltaDotAVX512(grad, before, after *float32, n int, lane *[8]float64)
