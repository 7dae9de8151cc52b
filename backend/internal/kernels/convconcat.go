package kernels

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A pointwise (1×1) convolution of a Concat along channels (MTAN's
// attention layers: conv1x1(cat(shared, attention))) runs over the Concat's
// parts in place: y = Σ_i W_i·x_i, W_i the columns of W that meet part i.
// The concatenated input is never formed, in the forward pass or in the
// backward passes that would recompute it, and the parts' gradients
// W_iᵀ·gy are written straight into their own buffers instead of being
// cut out of the concatenation's.

// PointwiseConv reports whether a convolution of an input of shape xs with
// weights of shape ws under p is pointwise (1×1, stride 1, no padding,
// one group): what ConvConcat runs.
func PointwiseConv(xs, ws []int, p ConvParams) bool {
	if len(xs) != 4 || len(ws) != 4 {
		return false
	}
	g, err := newConvGeom(tensor.Shape(xs), tensor.Shape(ws), p)
	return err == nil && g.direct && g.g == 1
}

// ConvConcat builds Conv(Concat(xs, axis 1), w, b) for a pointwise
// convolution (PointwiseConv) of 4-D parts xs [N, C_i, H, W] without
// forming the Concat. The node is differentiable with respect to every
// part, w and b.
func ConvConcat(xs []*gorgonia.Node, w, b *gorgonia.Node, p ConvParams) (*gorgonia.Node, error) {
	const name = "ConvConcat"
	if len(xs) == 0 {
		return nil, fmt.Errorf("ops: %s: no inputs", name)
	}
	if err := checkFloat(name, "weights W", w); err != nil {
		return nil, err
	}
	cs := make([]int, len(xs)) // channels per part
	var xs0 tensor.Shape
	c := 0
	for i, x := range xs {
		if err := checkFloat(name, fmt.Sprintf("input %d", i), x); err != nil {
			return nil, err
		}
		if err := sameDtype(name, x, w, b); err != nil {
			return nil, err
		}
		s := x.Shape()
		if len(s) != 4 {
			return nil, fmt.Errorf("ops: %s: input %d has shape %v, expected 4-D (NCHW)", name, i, s)
		}
		if i == 0 {
			xs0 = s
		} else if s[0] != xs0[0] || s[2] != xs0[2] || s[3] != xs0[3] {
			return nil, fmt.Errorf("ops: %s: input %d has shape %v, incompatible with input 0's %v", name, i, s, xs0)
		}
		cs[i] = s[1]
		c += s[1]
	}
	full := []int{xs0[0], c, xs0[2], xs0[3]}
	if !PointwiseConv(full, w.Shape(), p) {
		return nil, fmt.Errorf("ops: %s: X %v and W %v with %+v: expected a pointwise convolution (1×1, stride 1, no padding, one group)", name, full, w.Shape(), p)
	}
	g, err := newConvGeom(tensor.Shape(full), w.Shape(), p)
	if err != nil {
		return nil, fmt.Errorf("ops: %s: %w", name, err)
	}
	if b != nil && (b.Dims() != 1 || b.Shape()[0] != g.m) {
		return nil, fmt.Errorf("ops: %s: bias B %v: expected shape [%d]", name, b.Shape(), g.m)
	}
	k := len(xs)
	cc := &concatConv{g: g, cs: cs, sc: newConvScratch()}
	op := &fnOp{
		name:     fmt.Sprintf("ConvConcat{%v parts %v}", g, cs),
		outShape: tensor.Shape{g.n, g.m, g.oh, g.ow},
		into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			var bias tensor.Tensor
			if len(in) == k+2 {
				bias = in[k+1]
			}
			n := g.n * g.m * g.outPlane
			return dispatch(in[0],
				func() (tensor.Tensor, error) {
					return concatConvForward(cc, in[:k], in[k], bias, outBufDirty[float32](buf, n)), nil
				},
				func() (tensor.Tensor, error) {
					return concatConvForward(cc, in[:k], in[k], bias, outBufDirty[float64](buf, n)), nil
				})
		},
	}
	for i := range k {
		op.grads = append(op.grads, gradSpec{deps: []int{k, depGrad}, into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			n := g.n * cs[i] * g.inPlane
			return dispatch(in[0],
				func() (tensor.Tensor, error) {
					return concatConvGradX(cc, i, in[0], in[1], outBufDirty[float32](buf, n)), nil
				},
				func() (tensor.Tensor, error) {
					return concatConvGradX(cc, i, in[0], in[1], outBufDirty[float64](buf, n)), nil
				})
		}})
	}
	wdeps := make([]int, 0, k+1)
	for i := range k {
		wdeps = append(wdeps, i)
	}
	op.grads = append(op.grads, gradSpec{deps: append(wdeps, depGrad), into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
		n := g.m * g.c
		return dispatch(in[0],
			func() (tensor.Tensor, error) { return concatConvGradW(cc, in[:k], in[k], outBuf[float32](buf, n)), nil },
			func() (tensor.Tensor, error) { return concatConvGradW(cc, in[:k], in[k], outBuf[float64](buf, n)), nil })
	}})
	children := append(append([]*gorgonia.Node{}, xs...), w)
	op.inDims = make([]int, len(children))
	for i := range op.inDims {
		op.inDims[i] = 4
	}
	if b != nil {
		op.inDims = append(op.inDims, 1)
		op.name += "+bias"
		op.grads = append(op.grads, biasGrad())
		children = append(children, b)
	}
	fwd := op.into
	op.fwd = func(in []tensor.Tensor) (tensor.Tensor, error) { return fwd(nil, in) }
	// a pointwise convolution: part i's gradient is the product over its
	// C_i channels, the weights' over all C
	op.flops = func(input int) (int64, int64) {
		f := convPassFLOPs(&g)
		switch {
		case input < 0 || input == k:
		case input < k:
			f = f / int64(g.c) * int64(cs[input])
		default:
			f = 0
		}
		return f, f
	}
	for i := range op.grads {
		into := op.grads[i].into
		op.grads[i].fn = func(in []tensor.Tensor) (tensor.Tensor, error) { return into(nil, in) }
	}
	return apply(op, children...)
}

// concatConv is the geometry of a ConvConcat: g that of the convolution
// of the whole concatenation, cs the channels of each part.
type concatConv struct {
	g  convGeom
	cs []int
	sc *scratch
}

// first is the first column of W meeting part i.
func (cc *concatConv) first(i int) int {
	c0 := 0
	for _, c := range cc.cs[:i] {
		c0 += c
	}
	return c0
}

// part is the geometry of the pointwise convolution of part i alone (its
// channels, all the filters).
func (cc *concatConv) part(i int) convGeom {
	g := cc.g
	g.c, g.cg, g.colRows = cc.cs[i], cc.cs[i], cc.cs[i]
	return g
}

// concatConvForward writes y = Σ_i W_i·x_i (+ b) into out (any contents):
// per sample, the first part's product writes y, the others add to it.
func concatConvForward[T float](cc *concatConv, xs []tensor.Tensor, wt, bt tensor.Tensor, out []T) tensor.Tensor {
	g := &cc.g
	w := data[T](wt)
	var b []T
	if bt != nil {
		b = data[T](bt)
	}
	mul := gemmFor[T](g.n)
	hw := g.outPlane
	parallelProducts(g.n, g.m*g.c*hw, func(_, lo, hi int) { // a sample: W·x over all parts
		for n := lo; n < hi; n++ {
			o := out[n*g.m*hw:][:g.m*hw]
			beta := T(0)
			for i, xt := range xs {
				ci := cc.cs[i]
				x := data[T](xt)[n*ci*hw:][:ci*hw]
				mul(false, false, g.m, hw, ci, w[cc.first(i):], g.c, x, hw, beta, o, hw)
				beta = 1
			}
			if b != nil {
				for m := 0; m < g.m; m++ {
					row := o[m*hw:][:hw]
					for j := range row {
						row[j] += b[m]
					}
				}
			}
		}
	})
	return newTensor(tensor.Shape{g.n, g.m, g.oh, g.ow}, out)
}

// concatConvGradX writes the gradient of part i, W_iᵀ·gy per sample, into
// dx (any contents).
func concatConvGradX[T float](cc *concatConv, i int, wt, gyt tensor.Tensor, dx []T) tensor.Tensor {
	g := &cc.g
	w, gy := data[T](wt), data[T](gyt)
	mul := gemmFor[T](g.n)
	ci, hw := cc.cs[i], g.outPlane
	parallelProducts(g.n, ci*g.m*hw, func(_, lo, hi int) { // a sample: W_iᵀ·gy
		for n := lo; n < hi; n++ {
			mul(true, false, ci, hw, g.m, w[cc.first(i):], g.c, gy[n*g.m*hw:][:g.m*hw], hw, 0, dx[n*ci*hw:][:ci*hw], hw)
		}
	})
	return newTensor(tensor.Shape{g.n, ci, g.h, g.w}, dx)
}

// concatConvGradW writes the weight gradient into dw (zeroed, M × ΣC_i):
// each part's columns are the weight gradient of its own pointwise
// convolution (convGradWInto), formed in a scratch buffer.
func concatConvGradW[T float](cc *concatConv, xs []tensor.Tensor, gyt tensor.Tensor, dw []T) tensor.Tensor {
	g := &cc.g
	for i, xt := range xs {
		gi := cc.part(i)
		ci := cc.cs[i]
		buf := getScratch[T](&colScratch, g.m*ci)
		part := (*buf)[:g.m*ci]
		clear(part)
		convGradWInto(&gi, cc.sc, xt, gyt, part)
		c0 := cc.first(i)
		for m := 0; m < g.m; m++ {
			copy(dw[m*g.c+c0:][:ci], part[m*ci:][:ci])
		}
		colScratch.pool.Put(buf)
	}
	return newTensor(tensor.Shape{g.m, g.c, 1, 1}, dw)
}
