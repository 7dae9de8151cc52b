package stepvec

import "math"

// Propose writes Adam's proposal into prop, its metric into metric and
// its trust region into bound, for the direction v and the moments m and
// w before the step (nil: zero), after first bringing them forward by
// pend when pend is not nil (the moments rounded to float32 as a step
// stores them). With m' = β1m + (1−β1)v and w' = β2w + (1−β2)v²,
// d = √(w'/c2) + ε: prop = (m'/c1)/d, metric = 1/d, bound = Bound(m, w).
// Every slice holds len(v) values (m, w and pend, when not nil).
func (a Adam) Propose(prop, metric, bound, v, m, w, pend []float32) {
	a.propose(vector, prop, metric, bound, v, m, w, pend)
}

func (a Adam) propose(vec bool, prop, metric, bnd, v, m, w, pend []float32) {
	n := len(v)
	prop, metric, bnd = prop[:n], metric[:n], bnd[:n]
	if m != nil {
		m, w = m[:n], w[:n]
	}
	if pend != nil {
		pend = pend[:n]
	}
	c := a.consts()
	k := vectorPart(vec, n)
	if k > 0 {
		proposeAVX512(&prop[0], &metric[0], &bnd[0], &v[0], first(m), first(w), first(pend), k, c)
	}
	b1, b2 := c.b1, c.b2
	for i := k; i < n; i++ {
		gi := float64(v[i])
		var m0, w0 float64
		if m != nil {
			m0, w0 = float64(m[i]), float64(w[i])
		}
		if pend != nil {
			p := float64(pend[i])
			m0, w0 = float64(float32(b1*m0+(1-b1)*p)), float64(float32(b2*w0+(1-b2)*p*p))
		}
		mi := b1*m0 + (1-b1)*gi
		wi := b2*w0 + (1-b2)*gi*gi
		d := math.Sqrt(wi/c.c2) + c.eps
		prop[i] = float32((mi / c.c1) / d)
		metric[i] = float32(1 / d)
		bnd[i] = float32(bound(c, m0, w0))
	}
}
