package stepvec

// finiteAVX512 is Finite's kernel on the first n values, n a multiple of
// 8.
//
//go:noescape
func finiteAVX512(x *float32, n int) bool
