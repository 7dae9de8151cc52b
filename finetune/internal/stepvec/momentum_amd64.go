package stepvec

// momProposeAVX512 is Momentum.Propose's kernel on the first n elements,
// n a multiple of 8 (m nil for a zero buffer, pend nil for none).
//
//go:noescape
func momProposeAVX512(prop, v, m, pend *float32, n int, mu float64)

// momUpdateAVX512 is Momentum.Update's kernel on the first n elements, n
// a multiple of 8 (m nil for a zero buffer), reporting whether every
// value written is finite.
//
//go:noescape
func momUpdateAVX512(dst, base, v, m *float32, n int, mu, lr float64) bool

// momAdvanceAVX512 is Momentum.Advance's kernel on the first n elements,
// n a multiple of 8.
//
//go:noescape
func momAdvanceAVX512(m, v *float32, n int, mu float64)
