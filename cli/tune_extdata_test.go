package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// externalize rewrites the model at path so that its float initializers
// live in the external data file path+".data", as
// onnx.save_model(..., save_as_external_data=True) leaves them.
func externalize(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var data []byte
	loc := filepath.Base(path) + ".data"
	for _, tp := range m.Graph.Initializer {
		if tp.GetDataType() != int32(onnxpb.TensorProto_FLOAT) || tp.RawData == nil {
			continue
		}
		off := len(data)
		data = append(data, tp.RawData...)
		tp.RawData = nil
		tp.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
		tp.ExternalData = []*onnxpb.StringStringEntryProto{
			{Key: proto.String("location"), Value: proto.String(loc)},
			{Key: proto.String("offset"), Value: proto.String(strconv.Itoa(off))},
			{Key: proto.String("length"), Value: proto.String(strconv.Itoa(len(tp.GetRawData()) + len(data) - off))},
		}
	}
	if len(data) == 0 {
		t.Fatal("no float initializer in raw_data to move")
	}
	out, err := proto.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".data", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTuneExternalDataIsAnInput: a model's external data file is an input
// like the model: no output of tune or eval may name it, with or without
// --force, directly or as the data file --out writes beside itself; and a
// --data input named like that data file is refused too. Each case is
// refused before the first step and every file keeps its bytes.
func TestTuneExternalDataIsAnInput(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	externalize(t, model)
	weights := model + ".data"
	// A --data input that --out o.onnx would write as its data file.
	oData := filepath.Join(dir, "o.onnx.data")
	if b, err := os.ReadFile(data); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(oData, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before := fileSums(t, model, weights, data, oData)
	base := append([]string{"tune", model, "--data", data, "--criterion", "left+right", "--steps", "1", "--batch", "4"}, lenetTasks...)
	out := filepath.Join(dir, "out.onnx")
	tests := []struct {
		name   string
		args   []string
		needle string
	}{
		{"--checkpoint", []string{"--out", out, "--checkpoint", weights, "--force"}, "that is the input model's external data file"},
		{"--log", []string{"--out", out, "--log", weights, "--force"}, "that is the input model's external data file"},
		{"--csv", []string{"--out", out, "--csv", weights, "--force"}, "that is the input model's external data file"},
		{"--plot", []string{"--out", out, "--plot", weights, "--force"}, "that is the input model's external data file"},
		{"--out", []string{"--out", weights, "--force"}, "that is the input model's external data file"},
		{"--out over the model itself", []string{"--out", model, "--force"}, "that is the input model"},
		{"--out whose data file is a --data input", []string{"--data", oData, "--out", filepath.Join(dir, "o.onnx"), "--force"}, "--out data file " + oData + ": that is the input --data file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &atStep{}
			withTuneRecorder(t, rec)
			printed, err := runCLI(t, append(slices.Clone(base), tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.needle) {
				t.Fatalf("err = %v, want one containing %q\n%s", err, tc.needle, printed)
			}
			if rec.steps != 0 {
				t.Errorf("%d steps trained before the error", rec.steps)
			}
			for p, b := range before {
				if got, _ := os.ReadFile(p); !bytes.Equal(got, b) {
					t.Errorf("%s changed", p)
				}
			}
		})
	}
	t.Run("eval --grad-out", func(t *testing.T) {
		printed, err := runCLI(t, append([]string{"eval", model, "--data", data, "--grad-out", weights, "--force"}, lenetTasks...)...)
		if err == nil || !strings.Contains(err.Error(), "that is the input model's external data file") {
			t.Fatalf("err = %v\n%s", err, printed)
		}
	})
	// A good run writes the model and its own data file beside it.
	if printed, err := runCLI(t, append(slices.Clone(base), "--out", out)...); err != nil {
		t.Fatalf("%v\n%s", err, printed)
	}
	if _, err := os.Stat(out + ".data"); err != nil {
		t.Errorf("no data file beside the tuned model: %v", err)
	}
}

// TestTuneUnwritableOutFoundFirst: an --out that the run could not write
// at its end is refused before the first step: a folder given through a
// missing one ("nosub/../o.onnx", which the system cannot walk) and an
// immutable existing model under --force.
func TestTuneUnwritableOutFoundFirst(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	base := append([]string{"tune", model, "--data", data, "--criterion", "left+right", "--steps", "1", "--batch", "4"}, lenetTasks...)
	old := filepath.Join(dir, "old.onnx")
	if b, err := os.ReadFile(model); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(old, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, out, needle string
		immutable         bool
	}{
		{"through a missing folder", dir + "/nosub/../o.onnx", "nosub/.. does not exist", false},
		{"immutable", old, "it is immutable (chattr +i)", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.immutable {
				chattr, err := exec.LookPath("chattr")
				if err != nil {
					t.Skip("no chattr (e2fsprogs)")
				}
				if msg, err := exec.Command(chattr, "+i", tc.out).CombinedOutput(); err != nil {
					t.Skipf("this file system or user cannot set the immutable flag: %v %s", err, msg)
				}
				t.Cleanup(func() { exec.Command(chattr, "-i", tc.out).Run() })
			}
			rec := &atStep{}
			withTuneRecorder(t, rec)
			printed, err := runCLI(t, append(slices.Clone(base), "--out", tc.out, "--force")...)
			if err == nil || !strings.Contains(err.Error(), tc.needle) {
				t.Fatalf("err = %v, want %q\n%s", err, tc.needle, printed)
			}
			if rec.steps != 0 {
				t.Errorf("%d steps trained before the error", rec.steps)
			}
		})
	}
}
