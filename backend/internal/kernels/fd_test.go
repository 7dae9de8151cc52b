package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fdStep is the central-difference step; fdTol the accepted relative error.
const (
	fdStep = 1e-6
	fdTol  = 1e-6
)

// builder builds the op under test from its input nodes.
type builder func(in []*gorgonia.Node) (*gorgonia.Node, error)

// randTensor returns a float64 tensor of shape s with entries uniform in
// [-1, 1).
func randTensor(rng *rand.Rand, s ...int) *tensor.Dense {
	n := tensor.Shape(s).TotalSize()
	d := make([]float64, n)
	for i := range d {
		d[i] = 2*rng.Float64() - 1
	}
	return tensor.New(tensor.WithShape(s...), tensor.WithBacking(d))
}

// gradValues differentiates loss (in g) with respect to wrt, runs g and
// returns a copy of each gradient's values.
func gradValues(t *testing.T, g *gorgonia.ExprGraph, loss *gorgonia.Node, wrt gorgonia.Nodes) [][]float64 {
	t.Helper()
	grads, err := gorgonia.Grad(loss, wrt...)
	if err != nil {
		t.Fatalf("Grad: %v", err)
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatalf("run: %v", err)
	}
	vals := make([][]float64, len(grads))
	for i, gn := range grads {
		vals[i] = append([]float64(nil), gn.Value().Data().([]float64)...)
	}
	return vals
}

// lossGraph builds loss = Σ out ⊙ r over fresh input nodes holding vals.
func lossGraph(t *testing.T, vals []*tensor.Dense, b builder, r []float64) (*gorgonia.ExprGraph, []*gorgonia.Node, *gorgonia.Node, *gorgonia.Node) {
	t.Helper()
	g := gorgonia.NewGraph()
	in := make([]*gorgonia.Node, len(vals))
	for i, v := range vals {
		if v == nil {
			continue
		}
		in[i] = gorgonia.NewTensor(g, v.Dtype(), v.Dims(), gorgonia.WithShape(v.Shape()...), gorgonia.WithValue(v.Clone().(*tensor.Dense)), gorgonia.WithName(inName(i)))
	}
	out, err := b(in)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	n := out.Shape().TotalSize()
	if r == nil {
		t.Fatalf("no weights for output of %d elements", n)
	}
	flat, err := gorgonia.Reshape(out, tensor.Shape{n})
	if err != nil {
		t.Fatalf("reshape output: %v", err)
	}
	rv := gorgonia.NewVector(g, out.Dtype(), gorgonia.WithShape(n), gorgonia.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(r))))
	loss, err := gorgonia.Mul(flat, rv)
	if err != nil {
		t.Fatalf("loss: %v", err)
	}
	return g, in, out, loss
}

// gradCheck compares the symbolic gradients of Σ out ⊙ R (R fixed, random)
// with respect to the inputs marked in diff against central differences, and
// returns the worst relative error. Inputs may be nil (absent operands).
func gradCheck(t *testing.T, vals []*tensor.Dense, diff []bool, b builder) float64 {
	t.Helper()
	rng := rand.New(rand.NewSource(7))
	// Probe the output size with a forward-only build.
	g0 := gorgonia.NewGraph()
	probe := make([]*gorgonia.Node, len(vals))
	for i, v := range vals {
		if v != nil {
			probe[i] = gorgonia.NewTensor(g0, v.Dtype(), v.Dims(), gorgonia.WithShape(v.Shape()...), gorgonia.WithName(inName(i)))
		}
	}
	o0, err := b(probe)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	r := randTensor(rng, o0.Shape().TotalSize()).Data().([]float64)

	g, in, _, loss := lossGraph(t, vals, b, r)
	var wrt gorgonia.Nodes
	for i, d := range diff {
		if d {
			wrt = append(wrt, in[i])
		}
	}
	analytic := gradValues(t, g, loss, wrt)

	fg, fin, _, floss := lossGraph(t, vals, b, r)
	fm := gorgonia.NewTapeMachine(fg)
	defer fm.Close()
	eval := func() float64 {
		fm.Reset()
		if err := fm.RunAll(); err != nil {
			t.Fatalf("run: %v", err)
		}
		return floss.Value().Data().(float64)
	}
	worst := 0.0
	k := 0
	for i, d := range diff {
		if !d {
			continue
		}
		base := vals[i].Data().([]float64)
		for j := range base {
			x := append([]float64(nil), base...)
			x[j] = base[j] + fdStep
			must(t, gorgonia.Let(fin[i], tensor.New(tensor.WithShape(vals[i].Shape()...), tensor.WithBacking(x))))
			lp := eval()
			x = append([]float64(nil), base...)
			x[j] = base[j] - fdStep
			must(t, gorgonia.Let(fin[i], tensor.New(tensor.WithShape(vals[i].Shape()...), tensor.WithBacking(x))))
			lm := eval()
			num := (lp - lm) / (2 * fdStep)
			a := analytic[k][j]
			e := math.Abs(a-num) / math.Max(1, math.Abs(num))
			if e > worst {
				worst = e
			}
			if e > fdTol {
				t.Errorf("input %d element %d: analytic %.10g, numeric %.10g (rel err %.3g)", i, j, a, num, e)
			}
		}
		must(t, gorgonia.Let(fin[i], vals[i].Clone().(*tensor.Dense)))
		k++
	}
	t.Logf("worst FD relative error %.3g", worst)
	return worst
}

// inName names input i: unnamed Gorgonia inputs of one shape would be merged
// into one node by hash-consing.
func inName(i int) string { return fmt.Sprintf("in%d", i) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// forward evaluates the built op on vals and returns the output values.
func forward(t *testing.T, vals []*tensor.Dense, b builder) tensor.Tensor {
	t.Helper()
	g := gorgonia.NewGraph()
	in := make([]*gorgonia.Node, len(vals))
	for i, v := range vals {
		if v != nil {
			in[i] = gorgonia.NewTensor(g, v.Dtype(), v.Dims(), gorgonia.WithShape(v.Shape()...), gorgonia.WithValue(v.Clone().(*tensor.Dense)), gorgonia.WithName(inName(i)))
		}
	}
	out, err := b(in)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatalf("run: %v", err)
	}
	return out.Value().(tensor.Tensor).Clone().(tensor.Tensor)
}

// toF32 converts a float64 tensor to float32.
func toF32(t *tensor.Dense) *tensor.Dense {
	if t == nil {
		return nil
	}
	d := t.Data().([]float64)
	f := make([]float32, len(d))
	for i, v := range d {
		f[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(t.Shape()...), tensor.WithBacking(f))
}

// checkF32 runs b in float32 and float64 and requires agreement to 1e-4.
func checkF32(t *testing.T, vals []*tensor.Dense, b builder) {
	t.Helper()
	v32 := make([]*tensor.Dense, len(vals))
	for i, v := range vals {
		if v != nil && v.Dtype() == tensor.Float64 {
			v32[i] = toF32(v)
		} else {
			v32[i] = v
		}
	}
	o64 := forward(t, vals, b).Data().([]float64)
	o32 := forward(t, v32, b).Data().([]float32)
	for i := range o64 {
		if d := math.Abs(o64[i] - float64(o32[i])); d > 1e-4*math.Max(1, math.Abs(o64[i])) {
			t.Fatalf("float32 element %d = %g, float64 gives %g", i, o32[i], o64[i])
		}
	}
}

// fdWorst records the worst FD error over all tests, for the summary test.
var fdWorst float64

func noteFD(e float64) {
	if e > fdWorst {
		fdWorst = e
	}
}

// comparePasses fails t where a convolution path's three results (Y, dX,
// dW) differ from a reference path's: by more than 1e-12 of the value's
// scale in float64, or 2e-6·(4+|value|) in float32 (float32 results are
// compared with the reference's float32 results, the scale is the float64
// value's).
func comparePasses(t *testing.T, path, reference string, ref, got [3][]float64, ref32, got32 [3][]float32) {
	t.Helper()
	for k, what := range []string{"Y", "dX", "dW"} {
		for i, want := range ref[k] {
			if d := math.Abs(got[k][i] - want); d > 1e-12*(1+math.Abs(want)) {
				t.Fatalf("float64 %s[%d]: %s %v, %s %v", what, i, path, got[k][i], reference, want)
			}
			if d := math.Abs(float64(got32[k][i]) - float64(ref32[k][i])); d > 2e-6*(4+math.Abs(want)) {
				t.Fatalf("float32 %s[%d]: %s %v, %s %v", what, i, path, got32[k][i], reference, ref32[k][i])
			}
		}
	}
}
