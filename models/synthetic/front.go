package synthetic

import (
	"fmt"
	"math"
)

// Front returns k ≥ 2 points (ℓ1, ℓ2) of the true Pareto front, sorted by
// ℓ1 ascending, for plotting and for quality measures. For exp2 the points
// are Exp2Point(t) at t evenly spaced from 1 down to −1; for zdt2v they
// are (f, 1 − f²) at f evenly spaced in [0, 1].
func (p *Problem) Front(k int) [][2]float64 {
	if k < 2 {
		panic(fmt.Sprintf("synthetic: Front needs k ≥ 2 points, got %d", k))
	}
	out := make([][2]float64, k)
	for i := range out {
		s := float64(i) / float64(k-1)
		switch p.name {
		case "exp2":
			out[i] = Exp2Point(1 - 2*s)
		default:
			out[i] = [2]float64{s, 1 - s*s}
		}
	}
	return out
}

// ParetoGap returns a non-negative measure of how far θ (length
// NumParams) is from the problem's Pareto set, zero exactly on it: for
// exp2 the Euclidean distance to the segment (Exp2ParetoDistance), for
// zdt2v g(θ) − 1 (ZDT2VGap).
func (p *Problem) ParetoGap(theta []float64) float64 {
	if len(theta) != len(p.theta) {
		panic(fmt.Sprintf("synthetic: %s: ParetoGap needs %d values, got %d", p.name, len(p.theta), len(theta)))
	}
	if p.name == "exp2" {
		return Exp2ParetoDistance(theta)
	}
	return ZDT2VGap(theta)
}

// FrontDistance returns the Euclidean distance in loss space from the
// point l to the problem's true Pareto front (a curve), found by a dense
// scan refined by golden-section search.
func (p *Problem) FrontDistance(l [2]float64) float64 {
	curve := func(s float64) [2]float64 { // s ∈ [0, 1], ℓ1 ascending
		if p.name == "exp2" {
			return Exp2Point(1 - 2*s)
		}
		return [2]float64{s, 1 - s*s}
	}
	dist := func(s float64) float64 {
		c := curve(s)
		return math.Hypot(l[0]-c[0], l[1]-c[1])
	}
	const grid = 1000
	best := 0
	for i := 1; i <= grid; i++ {
		if dist(float64(i)/grid) < dist(float64(best)/grid) {
			best = i
		}
	}
	lo := math.Max(0, float64(best-1)/grid)
	hi := math.Min(1, float64(best+1)/grid)
	const phi = 0.6180339887498949
	for range 60 {
		a, b := hi-phi*(hi-lo), lo+phi*(hi-lo)
		if dist(a) < dist(b) {
			hi = b
		} else {
			lo = a
		}
	}
	return math.Min(dist((lo+hi)/2), dist(float64(best)/grid))
}
