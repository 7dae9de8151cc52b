package stepvec

// Momentum is momentum SGD's decay μ: its buffer b ← μb + v, its step
// θ ← θ − lr·b.
type Momentum float64

// Propose writes into prop the step μb' + v momentum SGD would take for
// the direction v from the buffer m (nil: zero), after first bringing m
// forward by pend when pend is not nil (b' = float32(μm + pend), as a
// step stores it). v, m and pend hold len(prop) values.
func (mu Momentum) Propose(prop, v, m, pend []float32) { mu.propose(vector, prop, v, m, pend) }

func (mu Momentum) propose(vec bool, prop, v, m, pend []float32) {
	n := len(prop)
	v = v[:n]
	if m != nil {
		m = m[:n]
	}
	if pend != nil {
		pend = pend[:n]
	}
	k := vectorPart(vec, n)
	if k > 0 {
		momProposeAVX512(&prop[0], &v[0], first(m), first(pend), k, float64(mu))
	}
	for i := k; i < n; i++ {
		var b float64
		if m != nil {
			b = float64(m[i])
		}
		if pend != nil {
			b = float64(float32(float64(mu)*b + float64(pend[i])))
		}
		prop[i] = float32(float64(mu)*b + float64(v[i]))
	}
}

// Update sets dst[i] = float32(float64(base[i]) − lr·(μb + v[i])) with b
// the buffer m (nil: zero) before the step, and reports whether every
// value it wrote is finite. base, v and m hold len(dst) values; dst may
// be base.
func (mu Momentum) Update(dst, base, v, m []float32, lr float64) bool {
	return mu.update(vector, dst, base, v, m, lr)
}

func (mu Momentum) update(vec bool, dst, base, v, m []float32, lr float64) bool {
	n := len(dst)
	base, v = base[:n], v[:n]
	if m != nil {
		m = m[:n]
	}
	k := vectorPart(vec, n)
	ok := true
	if k > 0 {
		ok = momUpdateAVX512(&dst[0], &base[0], &v[0], first(m), k, float64(mu), lr)
	}
	for i := k; i < n; i++ {
		var b float64
		if m != nil {
			b = float64(m[i])
		}
		step := float64(mu)*b + float64(v[i])
		dst[i] = float32(float64(base[i]) - lr*step)
	}
	return finiteGo(dst[k:]) && ok
}

// Advance brings the buffer m forward by the direction v, in place:
// m = float32(μm + v). m holds len(v) values.
func (mu Momentum) Advance(m, v []float32) { mu.advance(vector, m, v) }

func (mu Momentum) advance(vec bool, m, v []float32) {
	n := len(v)
	m = m[:n]
	k := vectorPart(vec, n)
	if k > 0 {
		momAdvanceAVX512(&m[0], &v[0], k, float64(mu))
	}
	for i := k; i < n; i++ {
		m[i] = float32(float64(mu)*float64(m[i]) + float64(v[i]))
	}
}
