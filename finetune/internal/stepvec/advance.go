package stepvec

// Advance brings Adam's moments m and w forward by the direction v, in
// place: m = float32(β1m + (1−β1)v), w = float32(β2w + (1−β2)v·v). m and
// w hold len(v) values.
func (a Adam) Advance(m, w, v []float32) { a.advance(vector, m, w, v) }

func (a Adam) advance(vec bool, m, w, v []float32) {
	n := len(v)
	m, w = m[:n], w[:n]
	c := a.consts()
	k := vectorPart(vec, n)
	if k > 0 {
		advanceAVX512(&m[0], &w[0], &v[0], k, c)
	}
	b1, b2 := c.b1, c.b2
	for i := k; i < n; i++ {
		gi := float64(v[i])
		mi := b1*float64(m[i]) + (1-b1)*gi
		wi := b2*float64(w[i]) + (1-b2)*gi*gi
		m[i], w[i] = float32(mi), float32(wi)
	}
}
