//go:build !amd64

package stepvec

// updateAVX512 is never called outside amd64.
func updateAVX512(dst, base, u *float32, n int, lr float64) bool { panic("stepvec: no vector kernel") }

// adamUpdateAVX512 is never called outside amd64.
func adamUpdateAVX512(dst, base, v, m, w *float32, n int, lr float64, c *consts) bool {
	panic("stepvec: no vector kernel")
}
