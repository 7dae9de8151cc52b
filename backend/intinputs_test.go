package backend

import (
	"errors"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
)

// intModel is one node whose inputs named in ints are int64 graph inputs.
func intModel(op string, opset int64, ins []onnxtest.In, ints ...string) *importer.Model {
	m := onnxtest.OneNode(op, opset, nil, ins, "y")
	for _, vi := range m.Proto.Graph.Input {
		for _, s := range ints {
			if vi.GetName() == s {
				et := int32(importer.Int64)
				vi.GetType().GetTensorType().ElemType = &et
			}
		}
	}
	return m
}

func TestIntegerInputBoundAtBuildTime(t *testing.T) {
	x := onnxtest.Feed("x", []int{2, 3}, 1, 2, 3, 4, 5, 6)
	shape := onnxtest.In{Name: "shape", T: importer.NewInt64("shape", []int{2}, []int64{3, 2})}
	m := intModel("Reshape", 13, []onnxtest.In{x, shape}, "shape")
	md, err := Open(m, nil, Options{Float64: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		shape     []int64
		wantShape []int
	}{{[]int64{3, 2}, []int{3, 2}}, {[]int64{6}, []int{6}}, {[]int64{-1, 1}, []int{6, 1}}, {[]int64{3, 2}, []int{3, 2}}} {
		b := map[string]*importer.Tensor{"x": x.T, "shape": importer.NewInt64("shape", []int{len(c.shape)}, c.shape)}
		got, err := md.Outputs(b)
		if err != nil {
			t.Fatalf("shape %v: %v", c.shape, err)
		}
		onnxtest.AssertClose(t, "Reshape", got["y"], c.wantShape, []float64{1, 2, 3, 4, 5, 6}, 0)
	}
	// Integral float arrays are accepted for integer inputs, others not.
	b := map[string]*importer.Tensor{"x": x.T, "shape": {Name: "shape", Type: importer.Float64, Shape: []int{1}, F64: []float64{6}}}
	if _, err := md.Outputs(b); err != nil {
		t.Errorf("integral float array: %v", err)
	}
	b["shape"].F64[0] = 6.5
	if _, err := md.Outputs(b); err == nil {
		t.Errorf("non-integral values for an int64 input: no error")
	}
}

func TestIntegerDataInputIsLimit(t *testing.T) {
	a := onnxtest.In{Name: "a", T: importer.NewInt64("a", []int{2}, []int64{7, 8})}
	c := onnxtest.In{Name: "c", T: importer.NewInt64("c", []int{2}, []int64{3, 5})}
	_, err := Open(intModel("Mod", 13, []onnxtest.In{a, c}, "a", "c"), nil, Options{})
	var le *graph.LimitError
	if !errors.As(err, &le) || le.OpType != "Mod" || le.Node != "n0" || le.Opset != 13 {
		t.Fatalf("Open: %v, want a *LimitError for node n0 (Mod, opset 13)", err)
	}
}

func TestOpenWithoutTasksRefusesEvaluate(t *testing.T) {
	x := onnxtest.Feed("x", []int{2}, 1, 2)
	md, err := Open(onnxtest.OneNode("Relu", 13, nil, []onnxtest.In{x}, "y"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := md.Evaluate(map[string]*importer.Tensor{"x": x.T}, nil, nil); err == nil {
		t.Fatal("Evaluate without tasks: no error")
	}
}
