// Package front trains N models together toward diverse points of the
// Pareto front (multi-point PNG with the energy criterion, through
// finetune.RunMulti) and measures the result: each model's task losses and
// accuracies on a data set, and the set's quality (hypervolume and IGD+,
// from png/pareto). It is the library behind `paretonav front` and the
// benchmark; it writes no files.
package front
