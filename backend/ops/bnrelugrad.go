package ops

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The backward pass of a BatchNorm with running statistics fused with the
// Relu after it (FuseReluInto): BatchNorm's gradient ops read the Relu's
// input gradient g = gy·[y > 0] three times (X: a·g, scale: Σ g·(x − μ)·σ⁻¹,
// B: Σ g), and the Relu's gradient op writes it once. BatchNormReluGrads
// computes what those gradient ops compute, the same bits, in one pass
// over gy and x, without writing g: on the full MTAN at 288×384 the four
// ops took 2 s of a 24 s step.

// BatchNormReluGradOf reports whether op is the gradient op that SymDiff
// built for input k (0: X, 1: scale, 2: B) of a BatchNorm with running
// statistics that can run fused with its Relu (FuseReluInto), returning
// that BatchNorm's op.
func BatchNormReluGradOf(op gorgonia.Op) (bn gorgonia.Op, k int, ok bool) {
	f, isFn := op.(*fnOp)
	if !isFn || f.parent == nil || f.parent.reluGrads == nil || f.input > 2 {
		return nil, 0, false
	}
	return f.parent, f.input, true
}

// BatchNormReluGrads computes the gradients of BatchNorm bn (an op for
// which BatchNormReluGradOf returned ok) from the output gradient gy of the
// Relu reading it: the gradient of X into dx when dx is not nil (len(gy)),
// of scale when wantScale, of B when wantB. in holds bn's inputs (X,
// scale, B, mean, var), all float32. The Relu's factor [y > 0] comes from
// X through BatchNorm's affine map, as the forward pass computed y (the
// same bits, so the same factor), so y is not read. The values are the
// bits bn's gradient ops give from the Relu gradient op's result.
func BatchNormReluGrads(bn gorgonia.Op, in []gorgonia.Value, gy gorgonia.Value, dx []float32, wantScale, wantB bool) (gx, gscale, gb gorgonia.Value, err error) {
	f, ok := bn.(*fnOp)
	if !ok || f.reluGrads == nil || len(in) != 5 {
		return nil, nil, nil, fmt.Errorf("ops: BatchNormReluGrads: %v is not a BatchNorm with running statistics", bn)
	}
	ts, err := asTensors(f.name, append(in[:5:5], gy))
	if err != nil {
		return nil, nil, nil, err
	}
	for i, t := range ts {
		if t.Dtype() != tensor.Float32 {
			return nil, nil, nil, fmt.Errorf("ops: %s: fused gradients: operand %d is %v, expected float32", f.name, i, t.Dtype())
		}
	}
	if !ts[0].Shape().Eq(ts[5].Shape()) {
		return nil, nil, nil, fmt.Errorf("ops: %s: fused gradients: X %v, the Relu's gradient %v", f.name, ts[0].Shape(), ts[5].Shape())
	}
	defer func() {
		if r := recover(); r != nil {
			gx, gscale, gb, err = nil, nil, nil, fmt.Errorf("ops: %s: fused gradients panicked: %v", f.name, r)
		}
	}()
	x, s, b := f.reluGrads(ts[:5], ts[5], dx, wantScale, wantB)
	if x != nil {
		gx = x
	}
	if s != nil {
		gscale = s
	}
	if b != nil {
		gb = b
	}
	return gx, gscale, gb, nil
}

// bnEvalReluGrads is BatchNormReluGrads' kernel for a BatchNorm with
// epsilon eps: in = (X, scale, B, mean, var). Channels run in parallel;
// within a channel the samples are summed in order, each row with the
// four partial sums of bnGradScale and sum4, as those kernels do.
func bnEvalReluGrads(in []tensor.Tensor, gyt tensor.Tensor, eps float64, dx []float32, wantScale, wantB bool) (gx, gscale, gb tensor.Tensor) {
	n, c, inner := bnDims(gyt.Shape())
	mean := data[float32](in[3])
	inv := invStd(data[float32](in[4]), eps)
	a, cf := bnEvalCoeffs[float32](in, eps) // the forward map y = max(a·x + cf, 0); a is also the gradient's scale·σ⁻¹
	zero := make([]float32, c)              // bnEvalGradX's B: a·g + 0 turns −0 into +0
	x, gy := data[float32](in[0]), data[float32](gyt)
	var ds, db []float32
	if wantScale {
		ds = make([]float32, c)
	}
	if wantB {
		db = make([]float32, c)
	}
	parallelFor(c, func(_, lo, hi int) {
		for j := lo; j < hi; j++ {
			for i := 0; i < n; i++ {
				o := (i*c + j) * inner
				var d []float32
				if dx != nil {
					d = dx[o : o+inner]
				}
				s, sb := reluGradRow(x[o:o+inner], gy[o:o+inner], d, a[j], cf[j], zero[j], mean[j], wantScale)
				if ds != nil {
					ds[j] += s * inv[j]
				}
				if db != nil {
					db[j] += sb
				}
			}
		}
	})
	if dx != nil {
		gx = newTensor(gyt.Shape(), dx)
	}
	if ds != nil {
		gscale = newTensor(tensor.Shape{c}, ds)
	}
	if db != nil {
		gb = newTensor(tensor.Shape{c}, db)
	}
	return gx, gscale, gb
}

// reluGradRow runs one row of bnEvalReluGrads: with the Relu's output
// y = max(a·x + cf, 0) and g = gy·[y > 0] (the Relu gradient's factor 1 or
// 0, so that an infinite or NaN gy times 0 gives NaN as it does there), it
// writes d = a·g + b (when d is not nil) and returns Σ g·(x − m) (when
// scale) and Σ g, each with four partial sums added as (s0+s1)+(s2+s3),
// then the tail in order.
func reluGradRow(x, gy, d []float32, a, cf, b, m float32, scale bool) (sx, sg float32) {
	gy = gy[:len(x)]
	var s0, s1, s2, s3, g0, g1, g2, g3 float32
	k := 0
	for ; k+4 <= len(x); k += 4 {
		xv := x[k : k+4 : k+4]
		v0 := gy[k] * reluFactor(a, xv[0], cf)
		v1 := gy[k+1] * reluFactor(a, xv[1], cf)
		v2 := gy[k+2] * reluFactor(a, xv[2], cf)
		v3 := gy[k+3] * reluFactor(a, xv[3], cf)
		if d != nil {
			dd := d[k : k+4 : k+4]
			dd[0] = a*v0 + b
			dd[1] = a*v1 + b
			dd[2] = a*v2 + b
			dd[3] = a*v3 + b
		}
		if scale {
			s0 += v0 * (xv[0] - m)
			s1 += v1 * (xv[1] - m)
			s2 += v2 * (xv[2] - m)
			s3 += v3 * (xv[3] - m)
		}
		g0 += v0
		g1 += v1
		g2 += v2
		g3 += v3
	}
	sx = (s0 + s1) + (s2 + s3)
	sg = (g0 + g1) + (g2 + g3)
	for ; k < len(x); k++ {
		v := gy[k] * reluFactor(a, x[k], cf)
		if d != nil {
			d[k] = a*v + b
		}
		if scale {
			sx += v * (x[k] - m)
		}
		sg += v
	}
	return sx, sg
}

// reluFactor is Relu's gradient factor at the output max(a·x + cf, 0) of
// BatchNorm's affine map (affineRelu's arithmetic): 1 where it is > 0,
// else 0.
func reluFactor(a, x, cf float32) float32 {
	one := uint32(0)
	if a*x+cf > 0 {
		one = 0x3f800000
	}
	return math.Float32frombits(one)
}
