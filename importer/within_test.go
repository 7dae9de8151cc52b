package importer

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// hugeExternalModel writes into dir a model whose one initializer "w"
// holds 2³¹ float32 values (8.6 GB) in external data "w.bin": a sparse
// file, so that the test takes no disk space. It returns the model's path.
func hugeExternalModel(t *testing.T, dir string) string {
	t.Helper()
	n := int64(1) << 31
	w := &onnxpb.TensorProto{Name: proto.String("w"), Dims: []int64{n}, DataType: proto.Int32(int32(Float32)),
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
		ExternalData: []*onnxpb.StringStringEntryProto{{Key: proto.String("location"), Value: proto.String("w.bin")}}}
	vi := func(name string) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: proto.Int32(int32(Float32)),
			Shape:    &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: n}}}}}}}}
	}
	g := &onnxpb.GraphProto{Name: proto.String("g"), Input: []*onnxpb.ValueInfoProto{vi("x")}, Output: []*onnxpb.ValueInfoProto{vi("y")},
		Initializer: []*onnxpb.TensorProto{w},
		Node:        []*onnxpb.NodeProto{{Name: proto.String("add"), OpType: proto.String("Add"), Input: []string{"x", "w"}, Output: []string{"y"}}}}
	m := &onnxpb.ModelProto{IrVersion: proto.Int64(7), OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(13)}}, Graph: g}
	b, err := proto.Marshal(m)
	must(t, err)
	path := filepath.Join(dir, "m.onnx")
	must(t, os.WriteFile(path, b, 0o644))
	f, err := os.Create(filepath.Join(dir, "w.bin"))
	must(t, err)
	must(t, f.Truncate(4*n))
	must(t, f.Close())
	return path
}

// TestLoadWithin: files that are not regular (a character device, a
// FIFO, a folder, an external-data FIFO) are refused before they are
// opened, and external data over the budget before they are read, with
// errors naming the file or initializer; nothing is allocated for them.
func TestLoadWithin(t *testing.T) {
	dir := t.TempDir()
	fifoModel := filepath.Join(dir, "fifo.onnx")
	must(t, syscall.Mkfifo(fifoModel, 0o644))
	huge := hugeExternalModel(t, t.TempDir())
	fifoExt := filepath.Join(t.TempDir(), "m.onnx")
	b, err := os.ReadFile(huge)
	must(t, err)
	must(t, os.WriteFile(fifoExt, b, 0o644))
	must(t, syscall.Mkfifo(filepath.Join(filepath.Dir(fifoExt), "w.bin"), 0o644))
	for _, tc := range []struct {
		name, path string
		budget     Budget
		want       []string
	}{
		{"character device", "/dev/zero", Budget{}, []string{"/dev/zero", "not a regular file", "character device"}},
		{"FIFO model", fifoModel, Budget{}, []string{"fifo.onnx", "a named pipe"}},
		{"folder", dir, Budget{}, []string{"a folder"}},
		{"FIFO external data", fifoExt, Budget{}, []string{`initializer "w"`, `"w.bin" is not a regular file (a named pipe)`}},
		{"external data over the budget", huge, Budget{Bytes: 500e6, From: "--max-memory 500MB"},
			[]string{`initializer "w" in "w.bin", 8.6 GB`, "500 MB allowed (--max-memory 500MB)"}},
		{"model file over the budget", huge, Budget{Bytes: 10, From: "--max-memory 10"}, []string{"model file", "more than the 10 bytes allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			done := make(chan error, 1)
			go func() { _, err := LoadWithin(tc.path, tc.budget); done <- err }()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("LoadWithin(%s) still blocked after 10 s", tc.path)
			}
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatalf("LoadWithin(%s): no error", tc.path)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 100<<20 {
				t.Errorf("allocated %d MB before refusing", grew>>20)
			}
			var me *MemoryError
			if strings.Contains(tc.name, "budget") && !errors.As(err, &me) {
				t.Errorf("error %T, want a *MemoryError", err)
			}
		})
	}
}
