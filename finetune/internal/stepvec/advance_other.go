//go:build !amd64

package stepvec

// advanceAVX512 is never called outside amd64.
func advanceAVX512(m, w, v *float32, n int, c *consts) { panic("stepvec: no vector kernel") }
