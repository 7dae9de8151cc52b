package kernels

import (
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkConvLeNet runs forward and backward of the first LeNet
// convolution (1→10 channels, 9×9 kernel, 28×28 input) at batch 256 in
// float32.
func BenchmarkConvLeNet(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(256, 1, 28, 28), gorgonia.WithName("x"),
		gorgonia.WithValue(toF32(randTensor(rng, 256, 1, 28, 28))))
	w := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(10, 1, 9, 9), gorgonia.WithName("w"),
		gorgonia.WithValue(toF32(randTensor(rng, 10, 1, 9, 9))))
	bias := gorgonia.NewTensor(g, tensor.Float32, 1, gorgonia.WithShape(10), gorgonia.WithName("b"),
		gorgonia.WithValue(toF32(randTensor(rng, 10))))
	y, err := Conv(x, w, bias, ConvParams{})
	if err != nil {
		b.Fatal(err)
	}
	n := y.Shape().TotalSize()
	flat := gorgonia.Must(gorgonia.Reshape(y, tensor.Shape{n}))
	r := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(n), gorgonia.WithName("r"),
		gorgonia.WithValue(toF32(randTensor(rng, n))))
	loss := gorgonia.Must(gorgonia.Mul(flat, r))
	if _, err := gorgonia.Grad(loss, x, w, bias); err != nil {
		b.Fatal(err)
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Reset()
		if err := m.RunAll(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLispMachineDoDiff checks DoDiff (used by Gorgonia's LispMachine)
// against the symbolic gradient for Conv.
func TestLispMachineDoDiff(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	xv, wv := randTensor(rng, 2, 2, 5, 5), randTensor(rng, 3, 2, 3, 3)
	b := func(in []*gorgonia.Node) (*gorgonia.Node, error) {
		return Conv(in[0], in[1], nil, ConvParams{Strides: []int{2, 1}, Pads: []int{1, 0, 0, 1}})
	}
	r := randTensor(rng, 2*3*2*4).Data().([]float64)
	// Symbolic.
	g, in, _, loss := lossGraph(t, []*tensor.Dense{xv, wv}, b, r)
	grads, err := gorgonia.Grad(loss, in...)
	must(t, err)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	must(t, m.RunAll())
	// Automatic (DoDiff).
	g2, in2, _, _ := lossGraph(t, []*tensor.Dense{xv, wv}, b, r)
	lm := gorgonia.NewLispMachine(g2)
	defer lm.Close()
	must(t, lm.RunAll())
	for i := range in {
		gv, err := in2[i].Grad()
		must(t, err)
		e := maxDiff(t, "DoDiff", gv.Data().([]float64), grads[i].Value().Data().([]float64))
		if e > 1e-12 {
			t.Errorf("input %d: DoDiff gradient differs from SymDiff by %.3g", i, e)
		}
	}
}
