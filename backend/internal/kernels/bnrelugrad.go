package kernels

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/vmath"
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
// four partial sums of bnGradScale and sum4, as those kernels do
// (vmath.BNReluGradRow32: g = gy·[a·x + cf > 0] with y = max(a·x + cf, 0)
// the forward pass's value, d = a·g + 0, Σ g·(x − μ) and Σ g; four lanes
// at a time with AVX, 1.27 → 0.44 ns a value).
func bnEvalReluGrads(in []tensor.Tensor, gyt tensor.Tensor, eps float64, dx []float32, wantScale, wantB bool) (gx, gscale, gb tensor.Tensor) {
	n, c, inner := bnDims(gyt.Shape())
	mean := data[float32](in[3])
	buf := borrowChans[float32](4 * c)
	defer returnChans(buf)
	inv := (*buf)[2*c:][:c]
	for j, v := range data[float32](in[4]) {
		inv[j] = float32(1 / math.Sqrt(float64(v)+eps)) // invStd's value
	}
	a, cf := bnEvalCoeffs(in, eps, *buf) // the forward map y = max(a·x + cf, 0); a is also the gradient's scale·σ⁻¹
	zero := (*buf)[3*c:][:c]             // bnEvalGradX's B: a·g + 0 turns −0 into +0
	clear(zero)
	x, gy := data[float32](in[0]), data[float32](gyt)
	var ds, db []float32
	if wantScale {
		ds = make([]float32, c)
	}
	if wantB {
		db = make([]float32, c)
	}
	parallelWork(c, n*inner, func(_, lo, hi int) {
		for j := lo; j < hi; j++ {
			for i := 0; i < n; i++ {
				o := (i*c + j) * inner
				var d []float32
				if dx != nil {
					d = dx[o : o+inner]
				}
				s, sb := vmath.BNReluGradRow32(x[o:o+inner], gy[o:o+inner], d, a[j], cf[j], zero[j], mean[j])
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
