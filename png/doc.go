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
//
// The paper's guarantee, ∇ℓ_iᵀv ≥ φ with the control on, is about the
// direction v; a momentum or preconditioned optimizer handed v as its
// gradient moves along something else (Adam along m̂/(√v̂+ε)), and there a
// loss can rise although the control is on. PNG.Constrain restores the
// guarantee on the update actually made: given the optimizer's proposal u₀
// (its update for v) and its diagonal metric P, it returns the update
// closest to u₀ in ‖·‖_{P⁻¹} with ∇ℓ_iᵀu ≥ φ_P = α·ρ·g_P for every task,
// where g_P is the min-norm value of K_P = J P Jᵀ (the same dual QP with K_P
// in place of K) and ρ is the caller's step scale: how long the optimizer's
// step is against P∘v, so that an averaged step, short under minibatch
// noise, is not stretched to the rate of an un-averaged one. Posing it on the proposal for v rather than for ∇F keeps the
// optimizer's own scale (Adam's second moment sees the direction it
// follows, so a small ∇F cannot blow the metric up) and leaves the
// proposal alone whenever its momentum already descends every loss fast
// enough. Plain steps need none of it: their proposal is v, which already
// complies (the paper's form, unchanged).
//
// Within Adam's per-weight step bound the dual of Constrain is piecewise
// quadratic, with a piece for every pattern of weights at the bound;
// Constrain solves it in at most 13 passes over the weights whatever the
// model (the Gram pass; one pass that tests the unbounded update against
// the box and finds the clipped min-norm update's rates; at most 10
// rounds of the box dual in all, one pass each; the update; two passes
// without a bound, three when the unbounded update stays within it), plus
// a scan of one byte a weight and the Newton steps' evaluations over at
// most n/16 weights a round (their values copied once a round, so that the
// evaluations stream them), which read at most 4n weights in all rounds
// together (4·2¹⁸ below 2¹⁸ weights). Its passes sum per chunk of
// columns, in chunk order: the result is the same bits on any number of
// workers. It allocates at most five bytes a weight and (m+3)·4 bytes for
// each of n/16 weights (ConstrainScratchBytes), which a training loop's
// memory plan counts. Should the rounds or that work run out, the update still meets
// every task's rate within the bound (MetricInfo.Inexact).
//
// With Settings.ThresholdCap = ρ > 0 the threshold is e = γ·min(ē, ρ·ē_W),
// ē capped at ρ times its value after a warm-up of ⌈1/(1−β)⌉ steps: e may
// follow the gradient scale down as training converges, but exploding
// gradients cannot raise it and switch the control off far from the front
// (RobustThresholdCap; the default, 0, is the paper's e = γ·ē).
//
// With Settings.MaxTradeoff = M > 0, a free step (control off) is taken
// only when it is a proper trade: to first order it raises the task losses
// by at most M times what it lowers them (TradeOK). g ≈ 0 wherever one
// task's gradient has vanished, however bad the others are (a weakly
// Pareto-optimal point), and there a criterion that wants that task lower,
// the energy at an end of the front, can only raise the others; an
// improper free step turns the control on instead (Info.Improper), and
// where even that has no solution, at a Pareto-stationary point with
// opposing gradients, the point holds still (Info.Held). A momentum or
// Adam caller tests the optimizer's update (PNG.ImproperUpdate).
// RobustMaxTradeoff is the value front and tune use; 0, the default, is
// the paper's method.
package png
