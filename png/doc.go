// Package png implements Pareto Navigation Gradient Descent (Ye & Liu, UAI
// 2022) on plain vectors: the Gram matrix of the task gradients, the
// min-norm point g(θ) of their convex hull, the dual QP of the controlled
// step, the control φ and threshold e, multi-point steps, and the baselines
// (linear scalarization, MGD) through the same code. It does no I/O and
// knows nothing of ONNX or Gorgonia.
package png
