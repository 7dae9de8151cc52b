package pareto

import (
	"fmt"
	"slices"
)

// Hypervolume returns the exact volume of the region dominated by points
// and bounded by the reference point ref (minimisation): the Lebesgue
// measure of the union of the boxes [p, ref]. Points that do not strictly
// dominate ref in every objective contribute nothing, so do points with a
// NaN coordinate.
//
// It uses a sweep for m = 2 (O(N log N)), slicing by the third objective
// with a 2-D sweep per slice for m = 3 (O(N² log N)), and the WFG algorithm
// (While, Bradstreet & Barone 2012) for m ≥ 4, whose cost grows quickly
// with N: it is meant for fronts of tens of points.
func Hypervolume(points [][]float64, ref []float64) float64 {
	m := len(ref)
	if m == 0 {
		panic("pareto: Hypervolume needs a reference point with at least one objective")
	}
	var pts [][]float64
	for _, p := range points {
		checkLen(m, p)
		if inside(p, ref) {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return 0
	}
	switch m {
	case 1:
		best := pts[0][0]
		for _, p := range pts {
			best = min(best, p[0])
		}
		return ref[0] - best
	case 2:
		return hv2(pts, ref)
	case 3:
		return hv3(pts, ref)
	}
	return wfg(nonDominatedPoints(pts), ref)
}

// inside reports whether p < ref in every objective (false for NaN).
func inside(p, ref []float64) bool {
	for i := range ref {
		if !(p[i] < ref[i]) {
			return false
		}
	}
	return true
}

// hv2 sweeps the points by the first objective; pts all lie inside ref.
func hv2(pts [][]float64, ref []float64) float64 {
	s := slices.Clone(pts)
	slices.SortFunc(s, func(a, b []float64) int { return cmp2(a[0], b[0], a[1], b[1]) })
	var area float64
	top := ref[1]
	for _, p := range s {
		if p[1] < top {
			area += (ref[0] - p[0]) * (top - p[1])
			top = p[1]
		}
	}
	return area
}

// hv3 slices the space by the third objective: between consecutive z
// values the cross-section is the 2-D hypervolume of the points below.
func hv3(pts [][]float64, ref []float64) float64 {
	s := slices.Clone(pts)
	slices.SortFunc(s, func(a, b []float64) int { return cmp2(a[2], b[2], a[0], b[0]) })
	var vol float64
	for k := range s {
		next := ref[2]
		if k+1 < len(s) {
			next = s[k+1][2]
		}
		if next > s[k][2] {
			vol += hv2(s[:k+1], ref[:2]) * (next - s[k][2])
		}
	}
	return vol
}

func cmp2(a0, b0, a1, b1 float64) int {
	switch {
	case a0 < b0:
		return -1
	case a0 > b0:
		return 1
	case a1 < b1:
		return -1
	case a1 > b1:
		return 1
	}
	return 0
}

// nonDominatedPoints returns the non-dominated points of pts, without
// duplicates.
func nonDominatedPoints(pts [][]float64) [][]float64 {
	idx := NonDominated(pts)
	out := make([][]float64, len(idx))
	for i, k := range idx {
		out[i] = pts[k]
	}
	return out
}

// mustSameDim panics unless every point has m objectives.
func mustSameDim(m int, pts [][]float64, what string) {
	for _, p := range pts {
		if len(p) != m {
			panic(fmt.Sprintf("pareto: %s: point has %d objectives, expected %d", what, len(p), m))
		}
	}
}
