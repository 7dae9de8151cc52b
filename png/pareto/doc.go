// Package pareto measures the quality of a set of points in objective
// space, all objectives minimised: the non-dominated subset, the exact
// hypervolume (2-D sweep, 3-D slicing, WFG for any dimension) and IGD+
// (Ishibuchi et al. 2015). Objectives to be maximised, such as accuracies,
// are negated first (ForAccuracies, NegateColumns).
//
// Shapes are programmer errors: points of different lengths, or a
// reference of the wrong length, panic, as in gonum.
package pareto
