package kernels

import "gorgonia.org/gorgonia"

// The floating-point work of the products this package's ops run,
// counted per pass (OpFLOPs): a multiply and an add are two operations.
// Element-wise work (bias, activations, normalisations, Winograd's
// transforms, im2col's copies) is not counted: next to the products it is
// a few percent of a convolutional network's operations.

// OpFLOPs returns the floating-point operations one run of op does, when
// it is one of this package's ops that counts them (a convolution's
// forward pass or one of its gradients): direct, as a direct convolution
// with every kernel tap (2·N·M·(C/group)·kH·kW·oH·oW per pass), and
// executed, what the kernels run: the F(2×2, 3×3) Winograd products
// (2·16·M·C per tile of 2×2 outputs) where winogradOK (for the weight
// gradient winogradGradWOK) picks Winograd, and
// without the taps that read only padding (trimConv). ok is false for
// other ops.
func OpFLOPs(op gorgonia.Op) (direct, executed int64, ok bool) {
	f, is := op.(*fnOp)
	if !is {
		return 0, 0, false
	}
	if f.parent != nil {
		if f.parent.flops == nil {
			return 0, 0, false
		}
		direct, executed = f.parent.flops(f.input)
		return direct, executed, true
	}
	if f.flops == nil {
		return 0, 0, false
	}
	direct, executed = f.flops(-1)
	return direct, executed, true
}

// convPassFLOPs is what one pass of g does as a direct convolution: the
// forward pass, the input gradient and the weight gradient are each one
// product of that size.
func convPassFLOPs(g *convGeom) int64 {
	return 2 * int64(g.n) * int64(g.m) * int64(g.cg) * int64(g.kh) * int64(g.kw) * int64(g.oh) * int64(g.ow)
}

// winoPassFLOPs is what one pass of g does as Winograd F(2×2, 3×3): 16
// products of M×C by C×tiles (forward), C×M by M×tiles (input gradient)
// or M×tiles by tiles×C (weight gradient).
func winoPassFLOPs(g *convGeom) int64 {
	tiles := int64(g.n) * int64((g.h+1)/2) * int64((g.w+1)/2)
	return 2 * 16 * int64(g.m) * int64(g.c) * tiles
}

// convFLOPs returns the flops function of a convolution of geometry g,
// trimmed to tr (nil: not trimmed): every pass of x (input 0) and w
// (input 1) costs the same; the bias's gradient (input 2) is a sum.
func convFLOPs(g *convGeom, tr *convTrim) func(input int) (int64, int64) {
	direct := convPassFLOPs(g)
	run := g
	if tr != nil {
		run = &tr.g
	}
	executed, executedW := convPassFLOPs(run), convPassFLOPs(run)
	if winogradOK(run) {
		executed = winoPassFLOPs(run)
	}
	if winogradGradWOK(run) {
		executedW = winoPassFLOPs(run)
	}
	return func(input int) (int64, int64) {
		switch {
		case input > 1:
			return 0, 0
		case input == 1: // the weight gradient
			return direct, executedW
		}
		return direct, executed
	}
}

// OpWinograd reports whether op is a convolution pass (forward or a
// gradient) that runs as Winograd F(2×2, 3×3).
func OpWinograd(op gorgonia.Op) bool {
	f, is := op.(*fnOp)
	if !is {
		return false
	}
	if f.parent != nil {
		if f.input == 1 { // a convolution's weight gradient
			return f.parent.winoGradW
		}
		f = f.parent
	}
	return f.wino
}
