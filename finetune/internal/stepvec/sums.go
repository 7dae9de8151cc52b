package stepvec

// ScaleSums returns Σ prop[i]²/p[i] and Σ p[i]·v[i]² with p = metric
// (nil: 1), each term's operations in that order in float64: the squared
// lengths ‖prop‖²_{P⁻¹} and ‖P∘v‖²_{P⁻¹} of finetune's stepScale. metric
// (when not nil) and v hold len(prop) values. The kernel sums per lane
// (the order depends on the length alone), the Go loop in index order.
func ScaleSums(prop, metric, v []float32) (num, den float64) {
	return scaleSums(vector, prop, metric, v)
}

func scaleSums(vec bool, prop, metric, v []float32) (num, den float64) {
	n := len(prop)
	v = v[:n]
	if metric != nil {
		metric = metric[:n]
	}
	k := vectorPart(vec, n)
	if k > 0 {
		var lane [2 * lanes]float64
		scaleSumsAVX512(&prop[0], first(metric), &v[0], k, &lane)
		for j := range lanes {
			num += lane[j]
			den += lane[lanes+j]
		}
	}
	for i := k; i < n; i++ {
		u := prop[i]
		p, x := 1.0, float64(v[i])
		if metric != nil {
			p = float64(metric[i])
		}
		num += float64(u) * float64(u) / p
		den += p * x * x
	}
	return num, den
}

// DeltaDot returns Σ g[i]·(after[i] − before[i]) in float64: one task's
// first-order change of its loss under the update that moved before to
// after (finetune's firstOrderChange). before and after hold len(g)
// values. The kernel sums per lane (the order depends on the length
// alone), the Go loop in index order.
func DeltaDot(g, before, after []float32) float64 { return deltaDot(vector, g, before, after) }

func deltaDot(vec bool, g, before, after []float32) float64 {
	n := len(g)
	before, after = before[:n], after[:n]
	var s float64
	k := vectorPart(vec, n)
	if k > 0 {
		var lane [lanes]float64
		deltaDotAVX512(&g[0], &before[0], &after[0], k, &lane)
		for _, l := range lane {
			s += l
		}
	}
	for j := k; j < n; j++ {
		s += float64(g[j]) * (float64(after[j]) - float64(before[j]))
	}
	return s
}
