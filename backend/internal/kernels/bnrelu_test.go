package kernels

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"

	"gorgonia.org/tensor"
)

// TestBatchNormReluFused checks max(BatchNorm(x), 0) in one pass
// (bnEvalReluFwd, FuseReluInto's kernel) against BatchNorm then
// max(v, 0), bit for bit, in float32, on values giving −0 (+0 after Relu),
// NaN, ±Inf and both signs.
func TestBatchNormReluFused(t *testing.T) {
	x := []float32{1, -1, 0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0.25,
		2, -3, 0.5, -0.5, 7, -7, 1e-30, -1e-30}
	xs := tensor.Shape{2, 2, 4}
	in := []tensor.Tensor{
		newTensor(xs, x),
		newTensor(tensor.Shape{2}, []float32{1.5, -0.75}), // scale
		newTensor(tensor.Shape{2}, []float32{0, 0.25}),    // B
		newTensor(tensor.Shape{2}, []float32{0, -0.5}),    // mean
		newTensor(tensor.Shape{2}, []float32{1, 4}),       // var
	}
	got := data[float32](bnEvalReluFwd(in, 1e-5, make([]float32, len(x))))
	bn := data[float32](bnEvalFwd(in, 1e-5, make([]float32, len(x))))
	for i, v := range bn {
		want := max(v, 0)
		if math.Float32bits(got[i]) != math.Float32bits(want) && !(got[i] != got[i] && want != want) {
			t.Errorf("x[%d] = %v: fused %v [%#x], BatchNorm then Relu %v [%#x]", i, x[i], got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
		}
	}
}

// TestBatchNormReluGrads checks the fused backward pass of BatchNorm and
// Relu (BatchNormReluGrads, through the op BatchNorm builds) against the
// Relu's gradient g = gy·[y > 0] followed by BatchNorm's three gradient
// kernels, bit for bit, in float32: rows of several lengths (the four
// partial sums and their tails), values giving ±0, NaN and ±Inf, and each
// subset of the wanted gradients.
func TestBatchNormReluGrads(t *testing.T) {
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for _, inner := range []int{1, 3, 4, 7, 64, 67} {
		n, c := 3, 5
		xs := tensor.Shape{n, c, inner}
		size := xs.TotalSize()
		r := rand.New(rand.NewSource(int64(inner)))
		x, gy := make([]float32, size), make([]float32, size)
		for i := range x {
			x[i], gy[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			if (i/inner)%c >= 2 {
				continue // channels 2 to 4 stay finite, so that their sums are numbers
			}
			if i%11 == 3 {
				gy[i] = specials[i%len(specials)]
			}
			if i%13 == 5 {
				x[i] = specials[(i/13)%len(specials)]
			}
		}
		in := []tensor.Tensor{
			newTensor(xs, x),
			newTensor(tensor.Shape{c}, []float32{1.5, -0.75, 0, 2, 1}),  // scale
			newTensor(tensor.Shape{c}, []float32{0, 0.25, -1, 0.5, 0}),  // B
			newTensor(tensor.Shape{c}, []float32{0, -0.5, 0.1, 3, -2}),  // mean
			newTensor(tensor.Shape{c}, []float32{1, 4, 0.5, 1e-3, 100}), // var
		}
		y := data[float32](bnEvalReluFwd(in, 1e-5, make([]float32, size)))
		g := make([]float32, size)
		for i := range g {
			f := float32(0)
			if y[i] > 0 {
				f = 1
			}
			g[i] = gy[i] * f
		}
		gt := newTensor(xs, g)
		wantX := data[float32](bnEvalGradX(in[1], in[4], gt, 1e-5, make([]float32, size)))
		wantS := data[float32](bnGradScale[float32](in[0], gt, in[3], in[4], 1e-5))
		wantB := data[float32](channelSum[float32](gt, nil))

		bn := bnOpFor(t, xs)
		for mask := 0; mask < 8; mask++ {
			wantDX, wantScale, wantBias := mask&1 != 0, mask&2 != 0, mask&4 != 0
			var dx []float32
			if wantDX {
				dx = make([]float32, size)
				for i := range dx {
					dx[i] = float32(math.NaN()) // dirty: every element must be written
				}
			}
			vals := make([]gorgonia.Value, 5)
			for i, tt := range in {
				vals[i] = tt
			}
			gx, gs, gb, err := BatchNormReluGrads(bn, vals, newTensor(xs, gy), dx, wantScale, wantBias)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got gorgonia.Value, want []float32, wanted bool) {
				if !wanted {
					if got != nil {
						t.Errorf("inner %d mask %d: %s computed, not wanted", inner, mask, what)
					}
					return
				}
				gd := got.Data().([]float32)
				for i := range want {
					if math.Float32bits(gd[i]) != math.Float32bits(want[i]) && !(gd[i] != gd[i] && want[i] != want[i]) {
						t.Fatalf("inner %d mask %d: %s[%d] fused %v [%#x], apart %v [%#x]", inner, mask, what, i, gd[i], math.Float32bits(gd[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
			check("dX", gx, wantX, wantDX)
			check("dscale", gs, wantS, wantScale)
			check("dB", gb, wantB, wantBias)
		}
	}
}

// bnOpFor builds a float32 BatchNorm with running statistics on an input
// shaped xs and returns its op, after checking that BatchNormReluGradOf
// recognises the gradient ops SymDiff builds for it: X, scale and B.
func bnOpFor(t *testing.T, xs tensor.Shape) gorgonia.Op {
	t.Helper()
	g := gorgonia.NewGraph()
	c := xs[1]
	x := gorgonia.NewTensor(g, tensor.Float32, len(xs), gorgonia.WithShape(xs...), gorgonia.WithName("x"))
	vec := func(name string) *gorgonia.Node {
		return gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(c), gorgonia.WithName(name))
	}
	ins := gorgonia.Nodes{x, vec("scale"), vec("B"), vec("mean"), vec("var")}
	y, err := BatchNorm(ins[0], ins[1], ins[2], ins[3], ins[4], BatchNormParams{Epsilon: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	gy := gorgonia.NewTensor(g, tensor.Float32, len(xs), gorgonia.WithShape(xs...), gorgonia.WithName("gy"))
	grads, err := y.Op().(gorgonia.SDOp).SymDiff(ins, y, gy)
	if err != nil {
		t.Fatal(err)
	}
	for k, gn := range grads {
		if gn == nil {
			continue
		}
		op, i, ok := BatchNormReluGradOf(gn.Op())
		if want := k < 3; ok != want || (ok && (op != y.Op() || i != k)) {
			t.Errorf("BatchNormReluGradOf(gradient of input %d) = %v, %d, %v", k, op, i, ok)
		}
	}
	if _, _, ok := BatchNormReluGradOf(y.Op()); ok {
		t.Error("BatchNormReluGradOf recognised the BatchNorm itself")
	}
	return y.Op()
}
