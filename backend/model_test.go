package backend

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/png"
)

// twoHead is x[N,4] → Gemm(W1,b1) → Relu → {Gemm(Wa) → LogSoftmax = logp,
// MatMul(Wb) + bb = reg}, with a Reshape of a folded shape chain on the
// way to exercise build-time folding.
func twoHead() *importer.Model {
	r := rand.New(rand.NewSource(1))
	nodes := []*onnxpb.NodeProto{
		onnxtest.Node("Gemm", "fc1", []string{"x", "W1", "b1"}, []string{"h0"}, onnxtest.AInt("transB", 1)),
		onnxtest.Node("Relu", "relu", []string{"h0"}, []string{"h"}),
		onnxtest.Node("Shape", "shape", []string{"h"}, []string{"hs"}),
		onnxtest.Node("Gather", "g0", []string{"hs", "zero"}, []string{"n"}, onnxtest.AInt("axis", 0)),
		onnxtest.Node("Unsqueeze", "u0", []string{"n", "ax0"}, []string{"n1"}),
		onnxtest.Node("Concat", "cat", []string{"n1", "minus1"}, []string{"newshape"}, onnxtest.AInt("axis", 0)),
		onnxtest.Node("Reshape", "rs", []string{"h", "newshape"}, []string{"hr"}),
		onnxtest.Node("Gemm", "fca", []string{"hr", "Wa"}, []string{"za"}),
		onnxtest.Node("LogSoftmax", "lsm", []string{"za"}, []string{"logp"}, onnxtest.AInt("axis", 1)),
		onnxtest.Node("MatMul", "mm", []string{"h", "Wb"}, []string{"zb"}),
		onnxtest.Node("Add", "addb", []string{"zb", "bb"}, []string{"reg"}),
	}
	inits := []*importer.Tensor{
		onnxtest.RandF32(r, "W1", 5, 4), onnxtest.RandF32(r, "b1", 5), onnxtest.RandF32(r, "Wa", 5, 3), onnxtest.RandF32(r, "Wb", 5, 2), onnxtest.RandF32(r, "bb", 2),
		importer.NewInt64("zero", nil, []int64{0}), importer.NewInt64("ax0", []int{1}, []int64{0}),
		importer.NewInt64("minus1", []int{1}, []int64{-1}),
	}
	return onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {-1, 4}}, "logp", "reg")
}

func twoHeadBatch(n int) map[string]*importer.Tensor {
	r := rand.New(rand.NewSource(2))
	x := onnxtest.RandF32(r, "x", n, 4)
	ya := make([]int64, n)
	for i := range ya {
		ya[i] = int64(r.Intn(3))
	}
	ya[n-1] = -100 // ignored
	return map[string]*importer.Tensor{"x": x, "ya": importer.NewInt64("ya", []int{n}, ya), "yb": onnxtest.RandF32(r, "yb", n, 2)}
}

func mustTasks(t testing.TB, specs ...string) []Task {
	t.Helper()
	var out []Task
	for _, s := range specs {
		tk, err := ParseTask(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tk)
	}
	return out
}

// TestPerTaskGradientsMatchSeparateGraphs: the Jacobian rows of a two-task
// model equal the gradients of single-task models (no mixing between
// tasks), and match central differences of the losses.
func TestPerTaskGradientsMatchSeparateGraphs(t *testing.T) {
	specs := []string{"a:nll:logp:ya", "b:mse:reg:yb"}
	m := twoHead()
	both, err := Open(m, mustTasks(t, specs...), Options{Float64: true})
	if err != nil {
		t.Fatal(err)
	}
	batch := twoHeadBatch(6)
	losses := make([]float64, 2)
	jac := png.NewJacobian(2, both.NumParams())
	if err := both.Evaluate(batch, losses, &jac); err != nil {
		t.Fatal(err)
	}
	for i, s := range specs {
		one, err := Open(m, mustTasks(t, s), Options{Float64: true})
		if err != nil {
			t.Fatal(err)
		}
		l1 := make([]float64, 1)
		j1 := png.NewJacobian(1, one.NumParams())
		if err := one.Evaluate(batch, l1, &j1); err != nil {
			t.Fatal(err)
		}
		if l1[0] != losses[i] {
			t.Errorf("task %s: loss %v alone, %v together", s, l1[0], losses[i])
		}
		nonzero := 0
		for k, v := range j1.Row(0) {
			if v != jac.Row(i)[k] {
				t.Fatalf("task %s: gradient %d is %v alone, %v together", s, k, v, jac.Row(i)[k])
			}
			if v != 0 {
				nonzero++
			}
		}
		if nonzero == 0 {
			t.Fatalf("task %s: gradient is all zero", s)
		}
	}
	// The heads' own weights get gradient only from their task.
	for _, p := range both.Trainable() {
		other := map[string]int{"Wa": 1, "Wb": 0, "bb": 0}
		k, ok := other[p.Name]
		if !ok {
			continue
		}
		for i := p.Offset; i < p.Offset+shape.Numel(p.Shape); i++ {
			if jac.Row(k)[i] != 0 {
				t.Fatalf("task %d has gradient %v on %s, which it does not use", k, jac.Row(k)[i], p.Name)
			}
		}
	}
	// Central differences on every parameter (float64 graph; the flat
	// vector is float32, so perturb with a step float32 represents).
	theta := make([]float32, both.NumParams())
	both.Params(theta)
	const h = 1e-3
	for k := range theta {
		lp, lm := make([]float64, 2), make([]float64, 2)
		th := append([]float32{}, theta...)
		th[k] = theta[k] + h
		_ = both.SetParams(th)
		if err := both.Evaluate(batch, lp, nil); err != nil {
			t.Fatal(err)
		}
		th[k] = theta[k] - h
		_ = both.SetParams(th)
		if err := both.Evaluate(batch, lm, nil); err != nil {
			t.Fatal(err)
		}
		step := float64(theta[k]+h) - float64(theta[k]-h)
		for i := 0; i < 2; i++ {
			num := (lp[i] - lm[i]) / step
			if math.Abs(num-float64(jac.Row(i)[k])) > 1e-4*math.Max(1, math.Abs(num)) {
				t.Fatalf("task %d, parameter %d: analytic %v, numeric %v", i, k, jac.Row(i)[k], num)
			}
		}
	}
	_ = both.SetParams(theta)
}

func TestTrainableAndFreeze(t *testing.T) {
	md, err := Open(twoHead(), mustTasks(t, "a:nll:logp:ya"), Options{Freeze: []string{"W?"}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range md.Trainable() {
		names = append(names, p.Name)
	}
	// W1, Wa, Wb frozen by the glob; int shape constants never trainable.
	if got := strings.Join(names, ","); got != "b1,bb" {
		t.Fatalf("trainable = %s, want b1,bb", got)
	}
	if w := md.Weights(); len(w) != 2 || w["b1"].Type != importer.Float32 {
		t.Fatalf("Weights() = %v", w)
	}
}

func TestUnsupportedOpsListedTogether(t *testing.T) {
	nodes := []*onnxpb.NodeProto{
		onnxtest.Node("Relu", "r", []string{"x"}, []string{"a"}),
		onnxtest.Node("FancyOp", "f1", []string{"a"}, []string{"b"}),
		onnxtest.Node("Relu", "r2", []string{"b"}, []string{"c"}),
		onnxtest.Node("OtherOp", "f2", []string{"c"}, []string{"y"}),
	}
	m := onnxtest.GraphModel(nodes, nil, map[string][]int64{"x": {-1, 3}}, "y")
	_, err := Open(m, mustTasks(t, "t:output:y:-"), Options{})
	var ue *graph.UnsupportedError
	if !errors.As(err, &ue) {
		t.Fatalf("error %v is not an UnsupportedError", err)
	}
	if len(ue.Ops) != 2 || ue.Ops[0].OpType != "FancyOp" || ue.Ops[0].Node != "f1" || ue.Ops[1].OpType != "OtherOp" || ue.Ops[1].Opset != 13 {
		t.Fatalf("unsupported = %+v", ue.Ops)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "backend: 2 unsupported node(s):") || strings.Count(msg, "backend:") != 1 {
		t.Errorf("message %q: want one \"backend: \" prefix, then the count", msg)
	}
}

func TestBadBatchErrors(t *testing.T) {
	md, err := Open(twoHead(), mustTasks(t, "a:nll:logp:ya", "b:mse:reg:yb"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	good := twoHeadBatch(4)
	cases := []struct {
		name string
		edit func(b map[string]*importer.Tensor)
		want string
	}{
		{"missing input", func(b map[string]*importer.Tensor) { delete(b, "x") }, `model input "x": no array "x"`},
		{"wrong shape", func(b map[string]*importer.Tensor) {
			b["x"] = importer.NewFloat32("x", []int{4, 5}, make([]float32, 20))
		}, `array "x" has shape [4 5], the model expects [-1 4]`},
		{"int input", func(b map[string]*importer.Tensor) { b["x"] = importer.NewInt64("x", []int{4, 4}, make([]int64, 16)) }, `expected floating point`},
		{"missing target", func(b map[string]*importer.Tensor) { delete(b, "yb") }, `task "b": no target array "yb"`},
		{"target shape", func(b map[string]*importer.Tensor) { b["yb"] = importer.NewFloat32("yb", []int{4}, make([]float32, 4)) }, `target array "yb" has shape [4], expected [4 2]`},
		{"label range", func(b map[string]*importer.Tensor) { b["ya"] = importer.NewInt64("ya", []int{4}, []int64{0, 1, 3, 0}) }, `element 2 is 3, expected a class in [0, 3)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := map[string]*importer.Tensor{}
			for k, v := range good {
				b[k] = v
			}
			c.edit(b)
			err := md.Evaluate(b, make([]float64, 2), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestParseTask(t *testing.T) {
	cases := []struct {
		in, want, err string
	}{
		{"seg:nll:seg_logp:seg", "seg:nll:seg_logp:seg", ""},
		{"seg:ce:logits:lab:ignore_index=255", "seg:ce:logits:lab:ignore_index=255", ""},
		{"l:output:loss", "l:output:loss:", ""},
		{"a:foo:o:t", "", "unknown loss"},
		{"a:mse:o", "", "needs a target"},
		{"a:mse:o:t:ignore_index=3", "", "takes no option"},
		{"a:nll:o:t:ignore_index=x", "", "not an integer"},
		{"a", "", "expected NAME:LOSS"},
	}
	for _, c := range cases {
		tk, err := ParseTask(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseTask(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || tk.String() != c.want {
			t.Errorf("ParseTask(%q) = %q, %v; want %q", c.in, tk.String(), err, c.want)
		}
	}
}

// TestSequenceTaskOutput checks that a task reading a tensor sequence is
// refused when the model is opened, naming the task and the value.
func TestSequenceTaskOutput(t *testing.T) {
	nodes := []*onnxpb.NodeProto{onnxtest.Node("SplitToSequence", "s", []string{"x", "two"}, []string{"s"})}
	m := onnxtest.GraphModel(nodes, []*importer.Tensor{onnxtest.Int64("two", []int{}, 2)}, map[string][]int64{"x": {4}}, "s")
	_, err := Open(m, []Task{{Name: "t", Loss: "output", Output: "s"}}, Options{})
	if err == nil || !onnxtest.ContainsAll(err.Error(), `task "t"`, `output "s" is a tensor sequence`) {
		t.Errorf("got %v, want an error naming the task and its sequence output", err)
	}
}

// TestLossRecordsDriveParseTask checks that a task spec is read as each
// loss kind's record says: a target array needed or refused, its
// options (integers) accepted and no other, its targets integer or not.
func TestLossRecordsDriveParseTask(t *testing.T) {
	for _, k := range Losses() {
		t.Run(k.Name, func(t *testing.T) {
			_, err := ParseTask("t:" + k.Name + ":out")
			if (err != nil) != k.NeedsTarget {
				t.Fatalf("without a target: error %v, the kind needs one: %v", err, k.NeedsTarget)
			}
			spec := "t:" + k.Name + ":out:y:"
			for i, o := range k.Options {
				if i > 0 {
					spec += ","
				}
				spec += o.Key + "=7"
			}
			task, err := ParseTask(spec)
			if err != nil {
				t.Fatalf("%s: %v", spec, err)
			}
			if len(k.Options) > 0 && task.IgnoreIndex != 7 {
				t.Fatalf("%s: ignore_index %d", spec, task.IgnoreIndex)
			}
			if _, err := ParseTask("t:" + k.Name + ":out:y:not_an_option=1"); err == nil || !strings.Contains(err.Error(), "takes no option") {
				t.Fatalf("an unknown option: %v", err)
			}
			if IntegerTarget(k.Name) != k.IntegerTarget {
				t.Fatalf("IntegerTarget %v, record %v", IntegerTarget(k.Name), k.IntegerTarget)
			}
		})
	}
}
