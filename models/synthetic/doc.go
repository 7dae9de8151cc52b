// Package synthetic implements the toy problems of Ye & Liu (UAI 2022) as
// finetune.Problem values: exp2, two exponential losses of a 10-dimensional
// θ whose Pareto set is a segment, and zdt2v, the ZDT2 variant of Ma et al.
// (2020) in 3 dimensions with the front ℓ2 = 1 − ℓ1². Both have two tasks
// named "l1" and "l2". Parameters are float32 (as for every Problem);
// losses and gradients are computed in float64.
package synthetic
