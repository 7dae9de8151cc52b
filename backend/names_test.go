package backend

import (
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestUnknownNamesListed: a task reading an output the model lacks, and a
// batch lacking an input or target array, are errors that list what there
// is (as criterion errors list the task names).
func TestUnknownNamesListed(t *testing.T) {
	m := onnxtest.GraphModel([]*onnxpb.NodeProto{
		onnxtest.Node("Mul", "mul", []string{"x", "w"}, []string{"seg"}),
		onnxtest.Node("Relu", "relu", []string{"seg"}, []string{"depth"}),
	}, []*importer.Tensor{importer.NewFloat32("w", []int{2}, []float32{1, 1})}, map[string][]int64{"x": {-1, 2}}, "seg", "depth")
	_, err := Open(m, mustTasks(t, "s:mse:segx:t"), Options{})
	if err == nil || !strings.Contains(err.Error(), `the model has no output "segx" (outputs: seg, depth;`) {
		t.Errorf("unknown output: error %v, want one listing the outputs seg, depth", err)
	}
	md, err := Open(m, mustTasks(t, "s:mse:seg:t"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := importer.NewFloat32("x", []int{1, 2}, []float32{1, 2})
	tg := importer.NewFloat32("t", []int{1, 2}, []float32{1, 2})
	for _, tc := range []struct {
		name  string
		batch map[string]*importer.Tensor
		want  string
	}{
		{"no input", map[string]*importer.Tensor{"images": x, "t": tg}, `model input "x": no array "x" in the data (arrays: images, t)`},
		{"no target", map[string]*importer.Tensor{"x": x, "target": tg}, `no target array "t" in the data (arrays: target, x)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := md.CheckBatch(tc.batch); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestNamesFromModelEscaped: the op types, outputs and arrays an error
// lists are escaped (termsafe.Name), as its %q-quoted names are, so that
// a model's control characters never reach a terminal raw.
func TestNamesFromModelEscaped(t *testing.T) {
	const evil = "\x1b]0;T\x07"
	const shown = `\x1b]0;T\a`
	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %s", what, err, want)
		} else if strings.ContainsAny(err.Error(), "\x1b\x07") {
			t.Errorf("%s: raw control character in %q", what, err)
		}
	}
	bad := onnxtest.GraphModel([]*onnxpb.NodeProto{onnxtest.Node(evil+"Op", evil+"node", []string{"x"}, []string{"y"})}, nil, map[string][]int64{"x": {-1, 2}}, "y")
	_, err := Open(bad, mustTasks(t, "s:mse:y:t"), Options{})
	check("unsupported op", err, shown+`Op (node "`+shown+`node"`)
	m := onnxtest.GraphModel([]*onnxpb.NodeProto{onnxtest.Node("Relu", "relu", []string{"x"}, []string{evil + "seg"})}, nil, map[string][]int64{"x": {-1, 2}}, evil+"seg")
	_, err = Open(m, mustTasks(t, "s:mse:segx:t"), Options{})
	check("missing output", err, "(outputs: "+shown+"seg;")
	md, err := Open(m, mustTasks(t, "s:mse:"+evil+"seg:t"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := importer.NewFloat32("x", []int{1, 2}, []float32{1, 2})
	check("missing target", md.CheckBatch(map[string]*importer.Tensor{"x": x, evil + "t": x}), "(arrays: "+shown+"t, x)")
}
