package pareto

import "slices"

// wfg computes the hypervolume of pts (mutually non-dominated, inside ref)
// by the WFG algorithm: the sum over points of their exclusive
// hypervolume, where the exclusive part of p_k is its box minus the
// hypervolume of the later points limited to that box.
func wfg(pts [][]float64, ref []float64) float64 {
	switch len(pts) {
	case 0:
		return 0
	case 1:
		return box(pts[0], ref)
	}
	// Sorting by the last objective, worst first, keeps limit sets small.
	s := slices.Clone(pts)
	last := len(ref) - 1
	slices.SortStableFunc(s, func(a, b []float64) int { return cmp2(b[last], a[last], 0, 0) })
	var vol float64
	for k, p := range s {
		vol += box(p, ref) - wfg(limitSet(s[k+1:], p), ref)
	}
	return vol
}

// limitSet returns the non-dominated points of {max(q, p) : q ∈ rest}: the
// parts of the later points that overlap the box of p.
func limitSet(rest [][]float64, p []float64) [][]float64 {
	if len(rest) == 0 {
		return nil
	}
	lim := make([][]float64, len(rest))
	for i, q := range rest {
		w := make([]float64, len(p))
		for j := range p {
			w[j] = max(p[j], q[j])
		}
		lim[i] = w
	}
	return nonDominatedPoints(lim)
}

// box returns the volume of [p, ref].
func box(p, ref []float64) float64 {
	v := 1.0
	for i := range ref {
		v *= ref[i] - p[i]
	}
	return v
}
