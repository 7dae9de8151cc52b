package pareto

import "math"

// IGDPlus returns the inverted generational distance plus (Ishibuchi et
// al. 2015) of points against a reference front (minimisation):
//
//	IGD⁺ = (1/|Z|) Σ_{z∈Z} min_{a∈points} d⁺(z, a),
//	d⁺(z, a) = sqrt(Σ_i max(a_i − z_i, 0)²).
//
// Smaller is better; a point that dominates z is at distance 0 from it.
// It returns +Inf when points is empty and panics when reference is empty.
func IGDPlus(points, reference [][]float64) float64 {
	if len(reference) == 0 {
		panic("pareto: IGDPlus needs at least one reference point")
	}
	m := len(reference[0])
	mustSameDim(m, reference, "IGDPlus reference")
	mustSameDim(m, points, "IGDPlus points")
	if len(points) == 0 {
		return math.Inf(1)
	}
	var total float64
	for _, z := range reference {
		best := math.Inf(1)
		for _, a := range points {
			var d float64
			for i := range z {
				if e := a[i] - z[i]; e > 0 {
					d += e * e
				}
			}
			best = min(best, d)
		}
		total += math.Sqrt(best)
	}
	return total / float64(len(reference))
}
