//go:build !amd64

package stepvec

// momProposeAVX512 is never called outside amd64.
func momProposeAVX512(prop, v, m, pend *float32, n int, mu float64) {
	panic("stepvec: no vector kernel")
}

// momUpdateAVX512 is never called outside amd64.
func momUpdateAVX512(dst, base, v, m *float32, n int, mu, lr float64) bool {
	panic("stepvec: no vector kernel")
}

// momAdvanceAVX512 is never called outside amd64.
func momAdvanceAVX512(m, v *float32, n int, mu float64) { panic("stepvec: no vector kernel") }
