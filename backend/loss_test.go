package backend

import (
	"errors"
	"math"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/png"
)

// TestLossHeads: y = x·w (w a trainable initializer equal to 1 at the
// start, so y = x); each loss against hand-computed values, and its
// gradient against central differences through Evaluate.
func TestLossHeads(t *testing.T) {
	x := []float32{0.5, -1, 2, 0.25, 1, -0.5, 0.1, 0.3} // [1,2,2,2] or [4,2]
	cases := []struct {
		spec   string
		shape  []int
		target *importer.Tensor
		want   float64
		x      []float32 // the input when not x
	}{
		{"t:mse:y:tg", []int{4, 2}, importer.NewFloat32("tg", []int{4, 2}, []float32{0, 0, 1, 1, 0, 0, 0, 0}),
			(0.25 + 1 + 1 + 0.5625 + 1 + 0.25 + 0.01 + 0.09) / 8, nil},
		{"t:l1:y:tg", []int{4, 2}, importer.NewFloat32("tg", []int{4, 2}, []float32{0, 0, 1, 1, 0, 0, 0, 0}),
			(0.5 + 1 + 1 + 0.75 + 1 + 0.5 + 0.1 + 0.3) / 8, nil},
		{"t:depth_l1:y:tg", []int{4, 2}, importer.NewFloat32("tg", []int{4, 2}, []float32{0, 0, 1, 1, 0, 0, 0, 0}),
			(1 + 0.75) / 2, nil},
		{"t:ce:y:tg:ignore_index=-1", []int{4, 2}, importer.NewInt64("tg", []int{4}, []int64{0, 1, -1, 1}),
			(math.Log(1+math.Exp(-1.5)) + math.Log(1+math.Exp(1.75)) + math.Log(1+math.Exp(-0.2))) / 3, nil},
		{"t:nll:y:tg", []int{4, 2}, importer.NewInt64("tg", []int{4}, []int64{0, 1, 1, 1}),
			(-0.5 - 0.25 + 0.5 - 0.3) / 4, nil},
		// normals [1,2,2,2]: pixel j has channels (x[j], x[4+j]); pixel 3
		// invalid. The predictions are not unit length: the loss is the
		// cosine's, not the dot product's.
		{"t:normal_cos:y:tg", []int{1, 2, 2, 2}, importer.NewFloat32("tg", []int{1, 2, 2, 2}, []float32{1, 0, 0.6, 0, 0, 1, 0.8, 0}),
			1 - (0.5/math.Sqrt(1.25)-0.5/math.Sqrt(1.25)+(2*0.6+0.1*0.8)/math.Sqrt(4.01))/3, nil},
		// Targets not unit length; pixel 0's prediction is zero (cosine 0,
		// still counted).
		{"t:normal_cos:y:tg", []int{1, 2, 2, 2}, importer.NewFloat32("tg", []int{1, 2, 2, 2}, []float32{3, 0, 1.2, 0, 0, 0.5, 1.6, 0}),
			1 - (0-0.5/math.Sqrt(1.25)+(2*0.6+0.1*0.8)/math.Sqrt(4.01))/3, []float32{0, -1, 2, 0.25, 0, -0.5, 0.1, 0.3}},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			ones := make([]float32, len(x))
			for i := range ones {
				ones[i] = 1
			}
			dims := make([]int64, len(c.shape))
			for i, d := range c.shape {
				dims[i] = int64(d)
			}
			m := onnxtest.GraphModel([]*onnxpb.NodeProto{onnxtest.Node("Mul", "mul", []string{"x", "w"}, []string{"y"})},
				[]*importer.Tensor{importer.NewFloat32("w", c.shape, ones)}, map[string][]int64{"x": dims}, "y")
			md, err := Open(m, mustTasks(t, c.spec), Options{Float64: true})
			if err != nil {
				t.Fatal(err)
			}
			in := x
			if c.x != nil {
				in = c.x
			}
			batch := map[string]*importer.Tensor{"x": importer.NewFloat32("x", c.shape, in), "tg": c.target}
			l := make([]float64, 1)
			jac := png.NewJacobian(1, md.NumParams())
			if err := md.Evaluate(batch, l, &jac); err != nil {
				t.Fatal(err)
			}
			if math.Abs(l[0]-c.want) > 1e-6 {
				t.Fatalf("loss %v, want %v", l[0], c.want)
			}
			theta := make([]float32, md.NumParams())
			md.Params(theta)
			const h = 1e-3
			for k := range theta {
				th := append([]float32{}, theta...)
				lp, lm := make([]float64, 1), make([]float64, 1)
				th[k] = theta[k] + h
				_ = md.SetParams(th)
				_ = md.Evaluate(batch, lp, nil)
				th[k] = theta[k] - h
				_ = md.SetParams(th)
				_ = md.Evaluate(batch, lm, nil)
				num := (lp[0] - lm[0]) / (float64(theta[k]+h) - float64(theta[k]-h))
				if math.Abs(num-float64(jac.Data[k])) > 1e-4*math.Max(1, math.Abs(num)) {
					t.Fatalf("parameter %d: analytic %v, numeric %v", k, jac.Data[k], num)
				}
			}
		})
	}
}

func TestNonFiniteLoss(t *testing.T) {
	m := onnxtest.GraphModel([]*onnxpb.NodeProto{onnxtest.Node("Mul", "mul", []string{"x", "w"}, []string{"y"})},
		[]*importer.Tensor{importer.NewFloat32("w", []int{2}, []float32{1, 1})}, map[string][]int64{"x": {-1, 2}}, "y")
	md, err := Open(m, mustTasks(t, "d:depth_l1:y:tg"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	batch := map[string]*importer.Tensor{"x": importer.NewFloat32("x", []int{1, 2}, []float32{1, 2}), "tg": importer.NewFloat32("tg", []int{1, 2}, []float32{0, 0})}
	err = md.Evaluate(batch, make([]float64, 1), nil)
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Task != "d" {
		t.Fatalf("error %v (%T), want a NonFiniteError", err, err)
	}
	if !errors.Is(err, png.ErrNonFinite) {
		t.Errorf("error %v does not match png.ErrNonFinite: the training loop would not roll the step back", err)
	}
}
