package kernels

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestBatchNormGradFD(t *testing.T) {
	for _, c := range []struct {
		name  string
		x     []int
		train bool
	}{
		{"eval_nchw", []int{2, 3, 4, 5}, false},
		{"eval_nc", []int{4, 3}, false},
		{"eval_batch1", []int{1, 2, 3, 3}, false},
		{"train_nchw", []int{2, 3, 4, 5}, true},
		{"train_nc", []int{5, 3}, true},
		{"train_batch1", []int{1, 2, 3, 4}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(6))
			ch := c.x[1]
			variance := randTensor(rng, ch)
			for i, v := range variance.Data().([]float64) {
				variance.Data().([]float64)[i] = 0.5 + math.Abs(v)
			}
			vals := []*tensor.Dense{randTensor(rng, c.x...), randTensor(rng, ch), randTensor(rng, ch), randTensor(rng, ch), variance}
			p := BatchNormParams{Epsilon: 1e-3, Training: c.train}
			b := func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				return BatchNorm(in[0], in[1], in[2], in[3], in[4], p)
			}
			diff := []bool{true, true, true, false, false}
			if c.train {
				// mean and variance are unused in training mode.
				vals = vals[:3]
				diff = diff[:3]
				b = func(in []*gorgonia.Node) (*gorgonia.Node, error) {
					return BatchNorm(in[0], in[1], in[2], nil, nil, p)
				}
			}
			noteFD(gradCheck(t, vals, diff, b))
			checkF32(t, vals, b)
		})
	}
}

func TestBatchStatistics(t *testing.T) {
	x := tensor.New(tensor.WithShape(2, 2, 2), tensor.WithBacking([]float64{1, 3, 10, 10, 5, 7, 20, 30}))
	mean := forward(t, []*tensor.Dense{x}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
		m, _, err := BatchStatistics(in[0])
		return m, err
	}).Data().([]float64)
	variance := forward(t, []*tensor.Dense{x}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
		_, v, err := BatchStatistics(in[0])
		return v, err
	}).Data().([]float64)
	wantM, wantV := []float64{4, 17.5}, []float64{5, 68.75}
	for i := range wantM {
		if math.Abs(mean[i]-wantM[i]) > 1e-12 || math.Abs(variance[i]-wantV[i]) > 1e-12 {
			t.Fatalf("mean %v var %v, expected %v %v", mean, variance, wantM, wantV)
		}
	}
}

// TestBatchNormEpsilonZero: Epsilon 0 means no ε (not ONNX's default).
func TestBatchNormEpsilonZero(t *testing.T) {
	vec := func(v ...float64) *tensor.Dense { return tensor.New(tensor.WithShape(len(v)), tensor.WithBacking(v)) }
	x := tensor.New(tensor.WithShape(1, 2, 2), tensor.WithBacking([]float64{1, 3, 10, 2}))
	y := forward(t, []*tensor.Dense{x, vec(1, 2), vec(0, 1), vec(1, 2), vec(4, 16)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
		return BatchNorm(in[0], in[1], in[2], in[3], in[4], BatchNormParams{})
	}).Data().([]float64)
	// (x − mean)/√var·scale + b with var 4 and 16: exact in binary.
	want := []float64{0, 1, 5, 1}
	for i := range want {
		if y[i] != want[i] {
			t.Fatalf("y = %v, expected %v (ε = 0)", y, want)
		}
	}
}
