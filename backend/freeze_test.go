package backend

import (
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestFreezeUnmatched: a freeze pattern that matches no initializer is an
// error naming every such pattern and the closest initializer names, the
// closest first; patterns that match are accepted and freeze.
func TestFreezeUnmatched(t *testing.T) {
	m := onnxtest.GraphModel([]*onnxpb.NodeProto{
		onnxtest.Node("Mul", "mul", []string{"x", "encoder.0.weight"}, []string{"h"}),
		onnxtest.Node("Add", "add", []string{"h", "head.bias"}, []string{"y"}),
	}, []*importer.Tensor{
		importer.NewFloat32("encoder.0.weight", []int{2}, []float32{1, 1}),
		importer.NewFloat32("head.bias", []int{2}, []float32{0, 0}),
	}, map[string][]int64{"x": {-1, 2}}, "y")
	tasks := mustTasks(t, "t:mse:y:tg")
	for _, tc := range []struct {
		name    string
		freeze  []string
		want    []string // all in the error; none: no error
		trained int      // parameters left to train when accepted
	}{
		{"matches", []string{"encoder.*"}, nil, 2},
		{"matches all", []string{"encoder.*", "head.bias"}, nil, 0},
		{"one unmatched", []string{"encoder.*", "encoder_0.*"}, []string{`freeze pattern "encoder_0.*" matches no initializer`, "encoder.0.weight, head.bias"}, 0},
		{"two unmatched", []string{"enc.*", "bias"}, []string{`freeze patterns "enc.*", "bias" match no initializer`, "of the model's 2 initializers"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md, err := Open(m, tasks, Options{Freeze: tc.freeze})
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if md.NumParams() != tc.trained {
					t.Errorf("%d parameters to train, want %d", md.NumParams(), tc.trained)
				}
				return
			}
			if err == nil {
				t.Fatalf("freeze %v accepted", tc.freeze)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
