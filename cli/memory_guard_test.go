package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// guardModel writes dir/m.onnx: y = x + w over float32 vectors of n
// elements (x declared [n]). With ext, w lives in external data "w.bin",
// a sparse file of n floats; otherwise w is a one-element initializer
// broadcast.
func guardModel(t *testing.T, dir string, n int64, ext bool) string {
	t.Helper()
	vi := func(name string, dims ...int64) *onnxpb.ValueInfoProto {
		shape := &onnxpb.TensorShapeProto{}
		for _, d := range dims {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Shape: shape}}}}
	}
	w := &onnxpb.TensorProto{Name: proto.String("w"), Dims: []int64{1}, DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), RawData: make([]byte, 4)}
	if ext {
		w = &onnxpb.TensorProto{Name: proto.String("w"), Dims: []int64{n}, DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
			DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
			ExternalData: []*onnxpb.StringStringEntryProto{{Key: proto.String("location"), Value: proto.String("w.bin")}}}
		f, err := os.Create(filepath.Join(dir, "w.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(4 * n); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	g := &onnxpb.GraphProto{Name: proto.String("g"), Input: []*onnxpb.ValueInfoProto{vi("x", n)}, Output: []*onnxpb.ValueInfoProto{vi("y", n)},
		Initializer: []*onnxpb.TensorProto{w},
		Node:        []*onnxpb.NodeProto{{Name: proto.String("add"), OpType: proto.String("Add"), Input: []string{"x", "w"}, Output: []string{"y"}}}}
	b, err := proto.Marshal(&onnxpb.ModelProto{IrVersion: proto.Int64(7), OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(13)}}, Graph: g})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMemoryGuards: inputs that used to hang or exhaust memory give a
// clear error naming the file, initializer or input, within seconds: a
// model that is /dev/zero; external data that is a FIFO; an external
// initializer of 2³¹ floats (a sparse file) under --max-memory in
// inspect, convert and tune; a graph input of 10¹² elements in inspect's
// memory estimate.
func TestMemoryGuards(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	huge := guardModel(t, t.TempDir(), 1<<31, true)
	fifoDir := t.TempDir()
	fifo := guardModel(t, fifoDir, 4, true)
	os.Remove(filepath.Join(fifoDir, "w.bin"))
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "w.bin"), 0o644); err != nil {
		t.Fatal(err)
	}
	wide := guardModel(t, t.TempDir(), 1e12, false)
	tune := []string{"--data", data, "--task", "left:nll:logp_left:left", "--task", "right:nll:logp_right:right", "--criterion", "left+right", "--steps", "1", "--out", filepath.Join(dir, "o.onnx")}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"tune /dev/zero", append([]string{"tune", "/dev/zero"}, tune...), []string{"/dev/zero is not a regular file"}},
		{"inspect /dev/zero", []string{"inspect", "/dev/zero"}, []string{"/dev/zero is not a regular file"}},
		{"inspect FIFO external data", []string{"inspect", fifo}, []string{`initializer "w"`, `"w.bin" is not a regular file (a named pipe)`}},
		{"inspect 2^31 floats", []string{"inspect", huge, "--max-memory", "500MB"}, []string{`initializer "w" in "w.bin", 8.6 GB`, "500 MB allowed (--max-memory 500MB)"}},
		{"convert 2^31 floats", []string{"convert", "--max-memory", "500MB", huge, filepath.Join(dir, "c.onnx")}, []string{`initializer "w" in "w.bin", 8.6 GB`, "500 MB allowed"}},
		{"tune 2^31 floats", append([]string{"tune", huge, "--max-memory", "500MB"}, tune...), []string{`initializer "w" in "w.bin", 8.6 GB`, "500 MB allowed"}},
		{"inspect input of 10^12", []string{"inspect", wide, "--batch", "1", "--max-memory", "8GB"}, []string{`model input "x" has shape [1000000000000]`, "4000.0 GB", "8.0 GB allowed (--max-memory 8GB)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type res struct {
				out string
				err error
			}
			done := make(chan res, 1)
			go func() { out, err := runCLI(t, tc.args...); done <- res{out, err} }()
			var r res
			select {
			case r = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("paretonav %s: still running after 20 s", strings.Join(tc.args, " "))
			}
			text := r.out
			if r.err != nil {
				text += "\n" + r.err.Error()
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("output %q (error %v) lacks %q", r.out, r.err, w)
				}
			}
			if _, err := os.Stat(model); err != nil {
				t.Fatal(err)
			}
		})
	}
}
