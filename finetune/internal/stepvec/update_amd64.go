package stepvec

// updateAVX512 is Update's kernel on the first n elements, n a multiple
// of 8, reporting whether every value written is finite.
//
//go:noescape
func updateAVX512(dst, base, u *float32, n int, lr float64) bool

// adamUpdateAVX512 is Adam.Update's kernel on the first n elements, n a
// multiple of 8 (m and w nil for zero moments), reporting whether every
// value written is finite.
//
//go:noescape
func adamUpdateAVX512(dst, base, v, m, w *float32, n int, lr float64, c *consts) bool
