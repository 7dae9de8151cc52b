package pareto

// NegateColumns returns a copy of points with the objectives in cols
// negated, turning quantities to maximise into quantities to minimise.
// Other columns are copied unchanged.
func NegateColumns(points [][]float64, cols ...int) [][]float64 {
	out := make([][]float64, len(points))
	for i, p := range points {
		q := append([]float64(nil), p...)
		for _, c := range cols {
			q[c] = -q[c]
		}
		out[i] = q
	}
	return out
}

// ForAccuracies returns a copy of points with every objective negated, so
// that accuracies (higher is better) are minimised as negatives. Negate
// the reference point the same way, ForAccuracies([][]float64{ref})[0]:
// the hypervolume of accuracies above a reference r equals the
// hypervolume of their negatives below −r.
func ForAccuracies(points [][]float64) [][]float64 {
	out := make([][]float64, len(points))
	for i, p := range points {
		q := make([]float64, len(p))
		for j, v := range p {
			q[j] = -v
		}
		out[i] = q
	}
	return out
}
