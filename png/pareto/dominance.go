package pareto

import (
	"fmt"
	"math"
)

// Dominates reports whether a dominates b under minimisation: a ≤ b in
// every objective and a < b in at least one.
func Dominates(a, b []float64) bool {
	checkLen(len(a), b)
	strict := false
	for i := range a {
		if a[i] > b[i] {
			return false
		}
		if a[i] < b[i] {
			strict = true
		}
	}
	return strict
}

// NonDominated returns, in ascending order, the indices of the points that
// no other point dominates (minimisation). Of several identical
// non-dominated points only the first (lowest index) is returned. Points
// with a NaN coordinate are never returned. It takes O(N²m) time.
func NonDominated(points [][]float64) []int {
	if len(points) == 0 {
		return nil
	}
	m := len(points[0])
	var out []int
	for i, p := range points {
		checkLen(m, p)
		if hasNaN(p) {
			continue
		}
		keep := true
		for j, q := range points {
			if j == i || hasNaN(q) {
				continue
			}
			if Dominates(q, p) || j < i && equal(q, p) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, i)
		}
	}
	return out
}

func equal(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func hasNaN(p []float64) bool {
	for _, v := range p {
		if math.IsNaN(v) {
			return true
		}
	}
	return false
}

// checkLen panics unless p has m objectives.
func checkLen(m int, p []float64) {
	if len(p) != m {
		panic(fmt.Sprintf("pareto: point has %d objectives, expected %d", len(p), m))
	}
}
