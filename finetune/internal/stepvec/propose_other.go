//go:build !amd64

package stepvec

// proposeAVX512 is never called outside amd64.
func proposeAVX512(prop, metric, bound, v, m, w, pend *float32, n int, c *consts) {
	panic("stepvec: no vector kernel")
}
