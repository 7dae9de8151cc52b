//go:build !amd64

package stepvec

// finiteAVX512 is never called outside amd64.
func finiteAVX512(x *float32, n int) bool { panic("stepvec: no vector kernel") }
