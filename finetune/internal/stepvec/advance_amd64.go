package stepvec

// advanceAVX512 is Advance's kernel on the first n elements, n a
// multiple of 8.
//
//go:noescape
func advanceAVX512(m, w, v *float32, n int, c *consts)
