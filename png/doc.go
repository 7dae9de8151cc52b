// Package png implements Pareto Navigation Gradient Descent (Ye & Liu, UAI
// 2022) on plain vectors: the Gram matrix of the task gradients, the
// min-norm point g(θ) of their convex hull, the dual QP of the controlled
// step, the control φ and threshold e, multi-point steps, and the baselines
// (linear scalarization, MGD) through the same code. It does no I/O and
// knows nothing of ONNX or Gorgonia.
//
// The pieces: Gram computes K = J Jᵀ in one blocked, parallel pass over the
// float32 Jacobian with float64 accumulation; MinNorm and SolveDual solve
// the two m-dimensional QPs exactly with a primal active-set method that
// copes with singular K (duplicate, parallel, opposite and zero
// gradients); PNG, MGD and Linear are Methods that turn J and the
// criterion's gradient into a direction v, reading J twice (the Gram pass
// and the pass that forms v); MultiDirection gives each of N models its
// own step.
package png
