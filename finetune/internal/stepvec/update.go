package stepvec

import "math"

// Update sets dst[i] = float32(float64(base[i]) − lr·float64(u[i])), the
// arithmetic in float64 rounded once, and reports whether every value it
// wrote is finite. base and u hold len(dst) values; dst may be base.
func Update(dst, base, u []float32, lr float64) bool { return update(vector, dst, base, u, lr) }

func update(vec bool, dst, base, u []float32, lr float64) bool {
	n := len(dst)
	base, u = base[:n], u[:n]
	k := vectorPart(vec, n)
	ok := true
	if k > 0 {
		ok = updateAVX512(&dst[0], &base[0], &u[0], k, lr)
	}
	for i := k; i < n; i++ {
		dst[i] = float32(float64(base[i]) - lr*float64(u[i]))
	}
	return finiteGo(dst[k:]) && ok
}

// Update sets dst[i] = float32(float64(base[i]) − lr·step) for Adam's own
// step (m'/c1)/(√(w'/c2)+ε) from the direction v and the moments m, w
// before the step (nil: zero), as Propose computes it, and reports
// whether every value it wrote is finite. base, v and the moments hold
// len(dst) values; dst may be base.
func (a Adam) Update(dst, base, v, m, w []float32, lr float64) bool {
	return a.update(vector, dst, base, v, m, w, lr)
}

func (a Adam) update(vec bool, dst, base, v, m, w []float32, lr float64) bool {
	n := len(dst)
	base, v = base[:n], v[:n]
	if m != nil {
		m, w = m[:n], w[:n]
	}
	c := a.consts()
	k := vectorPart(vec, n)
	ok := true
	if k > 0 {
		ok = adamUpdateAVX512(&dst[0], &base[0], &v[0], first(m), first(w), k, lr, c)
	}
	b1, b2 := c.b1, c.b2
	for i := k; i < n; i++ {
		gi := float64(v[i])
		var m0, w0 float64
		if m != nil {
			m0, w0 = float64(m[i]), float64(w[i])
		}
		mi := b1*m0 + (1-b1)*gi
		wi := b2*w0 + (1-b2)*gi*gi
		d := math.Sqrt(wi/c.c2) + c.eps
		step := (mi / c.c1) / d
		dst[i] = float32(float64(base[i]) - lr*step)
	}
	return finiteGo(dst[k:]) && ok
}
