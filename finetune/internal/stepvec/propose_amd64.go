package stepvec

// proposeAVX512 is Propose's AVX-512F kernel on the first n elements, n a
// multiple of 8; m and w are nil for zero moments, pend nil for none.
//
//go:noescape
func proposeAVX512(prop, metric, bound, v, m, w, pend *float32, n int, c *consts)
