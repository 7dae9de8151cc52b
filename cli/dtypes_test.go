package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
)

// TestDataElementTypes: arrays of another element type than the one that
// reads them are converted with a warning where nothing is lost or a
// numpy default is the cause (float64 inputs, uint8 or int32 labels), and
// refused otherwise (float or bool class labels, integer regression
// targets), naming the array, its type and the type expected
// (docs/data.md, "Element types").
func TestDataElementTypes(t *testing.T) {
	dir := t.TempDir()
	model, _ := tinyLeNet(t, dir, 4)
	toF64 := func(a *importer.Tensor) *importer.Tensor {
		v := a.Float64s()
		return &importer.Tensor{Name: a.Name, Type: importer.Float64, Shape: a.Shape, F64: v}
	}
	asType := func(a *importer.Tensor, typ importer.DataType) *importer.Tensor {
		return &importer.Tensor{Name: a.Name, Type: typ, Shape: a.Shape, I64: a.I64}
	}
	tests := []struct {
		name  string
		edit  func(a map[string]*importer.Tensor)
		tasks []string
		warn  []string // in the output when accepted
		err   []string // in the error when refused
	}{
		{"float64 input", func(a map[string]*importer.Tensor) { a["x"] = toF64(a["x"]) }, lenetTasks,
			[]string{`warning: --data: `, `array "x" (float64) converted to float32 for model input "x"`}, nil},
		{"uint8 labels", func(a map[string]*importer.Tensor) { a["left"] = asType(a["left"], importer.Uint8) }, lenetTasks,
			[]string{`array "left" (uint8) converted to int64 for the target of task "left" (loss nll)`}, nil},
		{"int32 labels", func(a map[string]*importer.Tensor) { a["right"] = asType(a["right"], importer.Int32) }, lenetTasks,
			[]string{`array "right" (int32) converted to int64`}, nil},
		{"float labels", func(a map[string]*importer.Tensor) {
			a["left"] = &importer.Tensor{Name: "left", Type: importer.Float32, Shape: a["left"].Shape, F32: make([]float32, 4)}
		}, lenetTasks, nil, []string{`array "left" for the target of task "left" (loss nll) has element type float32`, "class indices as int64", ".astype(np.int64)"}},
		{"bool labels", func(a map[string]*importer.Tensor) { a["left"] = asType(a["left"], importer.Bool) }, lenetTasks,
			nil, []string{`array "left" for the target of task "left" (loss nll) has element type bool`}},
		{"integer regression target", func(a map[string]*importer.Tensor) {
			a["soft"] = importer.NewInt64("soft", []int{4, 10}, make([]int64, 40))
		}, []string{"--task", "left:mse:logp_left:soft", "--task", "right:nll:logp_right:right"}, nil,
			[]string{`array "soft" for the target of task "left" (loss mse) has element type int64`, ".astype(np.float32)"}},
		{"float64 regression target", func(a map[string]*importer.Tensor) {
			a["soft"] = &importer.Tensor{Name: "soft", Type: importer.Float64, Shape: []int{4, 10}, F64: make([]float64, 40)}
		}, []string{"--task", "left:mse:logp_left:soft", "--task", "right:nll:logp_right:right"},
			[]string{`array "soft" (float64) converted to float32 for the target of task "left" (loss mse)`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arrays := tinyArrays(4)
			tc.edit(arrays)
			data := filepath.Join(t.TempDir(), "d.npz")
			if err := npz.Write(data, arrays); err != nil {
				t.Fatal(err)
			}
			printed, err := runCLI(t, append([]string{"eval", model, "--data", data}, tc.tasks...)...)
			if tc.err != nil {
				if err == nil {
					t.Fatalf("eval accepted the data:\n%s", printed)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.warn {
				if !strings.Contains(printed, w) {
					t.Errorf("output lacks %q:\n%s", w, printed)
				}
			}
		})
	}
}
