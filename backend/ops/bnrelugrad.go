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
// over gy, y and x, without writing g: on the full MTAN at 288×384 the
// four ops took 2 s of a 24 s step.

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
// which BatchNormReluGradOf returned ok) from the output y of the Relu
// reading it and that Relu's output gradient gy: the gradient of X into
// dx when dx is not nil (len(y)), of scale when wantScale, of B when
// wantB. in holds bn's inputs (X, scale, B, mean, var), all float32; X
// may be nil when wantScale is false. The values are the bits bn's
// gradient ops give from the Relu gradient op's result.
func BatchNormReluGrads(bn gorgonia.Op, in []gorgonia.Value, y, gy gorgonia.Value, dx []float32, wantScale, wantB bool) (gx, gscale, gb gorgonia.Value, err error) {
	f, ok := bn.(*fnOp)
	if !ok || f.reluGrads == nil || len(in) != 5 {
		return nil, nil, nil, fmt.Errorf("ops: BatchNormReluGrads: %v is not a BatchNorm with running statistics", bn)
	}
	if !wantScale {
		in = append([]gorgonia.Value{gy}, in[1:]...) // X is not read
	}
	ts, err := asTensors(f.name, append(in[:5:5], y, gy))
	if err != nil {
		return nil, nil, nil, err
	}
	for i, t := range ts {
		if t.Dtype() != tensor.Float32 {
			return nil, nil, nil, fmt.Errorf("ops: %s: fused gradients: operand %d is %v, expected float32", f.name, i, t.Dtype())
		}
	}
	defer func() {
		if r := recover(); r != nil {
			gx, gscale, gb, err = nil, nil, nil, fmt.Errorf("ops: %s: fused gradients panicked: %v", f.name, r)
		}
	}()
	x, s, b := f.reluGrads(ts[:5], ts[5], ts[6], dx, wantScale, wantB)
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
func bnEvalReluGrads(in []tensor.Tensor, yt, gyt tensor.Tensor, eps float64, dx []float32, wantScale, wantB bool) (gx, gscale, gb tensor.Tensor) {
	n, c, inner := bnDims(yt.Shape())
	scale, mean := data[float32](in[1]), data[float32](in[3])
	inv := invStd(data[float32](in[4]), eps)
	a := make([]float32, c)
	for j := range scale {
		a[j] = scale[j] * inv[j]
	}
	zero := make([]float32, c) // bnEvalGradX's B: a·g + 0 turns −0 into +0
	y, gy := data[float32](yt), data[float32](gyt)
	var x, ds, db []float32
	if wantScale {
		x, ds = data[float32](in[0]), make([]float32, c)
	}
	if wantB {
		db = make([]float32, c)
	}
	parallelFor(c, func(_, lo, hi int) {
		for j := lo; j < hi; j++ {
			aj, bj, mj := a[j], zero[j], mean[j]
			for i := 0; i < n; i++ {
				o := (i*c + j) * inner
				ys, gs := y[o:o+inner], gy[o:o+inner]
				var xs, d []float32
				if x != nil {
					xs = x[o : o+inner]
				}
				if dx != nil {
					d = dx[o : o+inner]
				}
				s, sb := reluGradRow(ys, gs, xs, d, aj, bj, mj)
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
		gx = newTensor(yt.Shape(), dx)
	}
	if ds != nil {
		gscale = newTensor(tensor.Shape{c}, ds)
	}
	if db != nil {
		gb = newTensor(tensor.Shape{c}, db)
	}
	return gx, gscale, gb
}

// reluGradRow runs one row of bnEvalReluGrads: with g = gy·[y > 0] (the
// Relu gradient's factor 1 or 0, so that an infinite or NaN gy times 0
// gives NaN as it does there), it writes d = a·g + b (when d is not nil)
// and returns Σ g·(x − m) (when x is not nil) and Σ g, each with four
// partial sums added as (s0+s1)+(s2+s3), then the tail in order.
func reluGradRow(y, gy, x, d []float32, a, b, m float32) (sx, sg float32) {
	gy = gy[:len(y)]
	var s0, s1, s2, s3, g0, g1, g2, g3 float32
	k := 0
	for ; k+4 <= len(y); k += 4 {
		v0 := gy[k] * reluFactor(y[k])
		v1 := gy[k+1] * reluFactor(y[k+1])
		v2 := gy[k+2] * reluFactor(y[k+2])
		v3 := gy[k+3] * reluFactor(y[k+3])
		if d != nil {
			dd := d[k : k+4 : k+4]
			dd[0] = a*v0 + b
			dd[1] = a*v1 + b
			dd[2] = a*v2 + b
			dd[3] = a*v3 + b
		}
		if x != nil {
			xv := x[k : k+4 : k+4]
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
	for ; k < len(y); k++ {
		v := gy[k] * reluFactor(y[k])
		if d != nil {
			d[k] = a*v + b
		}
		if x != nil {
			sx += v * (x[k] - m)
		}
		sg += v
	}
	return sx, sg
}

// reluFactor is Relu's gradient factor at output y: 1 where y > 0, else 0.
func reluFactor(y float32) float32 {
	one := uint32(0)
	if y > 0 {
		one = 0x3f800000
	}
	return math.Float32frombits(one)
}
