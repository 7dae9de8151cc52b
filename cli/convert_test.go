package cli

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// runConvert runs `paretonav convert args...` and returns its output.
func runConvert(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := NewApp()
	app.Writer, app.ErrWriter = &out, &out
	err := app.Run(append([]string{"paretonav", "convert"}, args...))
	return out.String(), err
}

// TestConvert converts the importer's fixtures: inline models come back
// equal (proto.Equal); external-data models differ only in their
// external_data entries; weights are bit-identical either way.
func TestConvert(t *testing.T) {
	fixtures := filepath.Join("..", "importer", "testdata")
	cases := []struct {
		in       string
		args     []string
		wantData bool
		wantOut  string
	}{
		{"view_dyn13.onnx", nil, false, "9 nodes, 2 initializers (inline), IR 7, opset 13"},
		{"dtypes.onnx", nil, false, "26 initializers (inline)"},
		{"mlp_ext.onnx", nil, true, "4 initializers (external data in out.onnx.data)"},
		{"mlp_ext.onnx", []string{"--inline-data"}, false, "4 initializers (inline)"},
	}
	for _, c := range cases {
		t.Run(c.in+strings.Join(c.args, ""), func(t *testing.T) {
			in := filepath.Join(fixtures, c.in)
			out := filepath.Join(t.TempDir(), "out.onnx")
			printed, err := runConvert(t, append(c.args, in, out)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, printed)
			}
			if !strings.Contains(printed, c.wantOut) {
				t.Errorf("output %q lacks %q", printed, c.wantOut)
			}
			m1, err := importer.Load(in)
			convertMust(t, err)
			m2, err := importer.Load(out)
			convertMust(t, err)
			if _, err := os.Stat(out + ".data"); (err == nil) != c.wantData {
				t.Errorf("data file present = %v, want %v", err == nil, c.wantData)
			}
			if !m1.HasExternalData() && !proto.Equal(m1.Proto, m2.Proto) {
				t.Errorf("converted model differs from %s", c.in)
			}
			w1, err := m1.Initializers()
			convertMust(t, err)
			w2, err := m2.Initializers()
			convertMust(t, err)
			for name, a := range w1 {
				if !sameTensorBits(a, w2[name]) {
					t.Errorf("%s changed", name)
				}
			}
			// Everything but the initializers' data location is unchanged.
			if !proto.Equal(withoutDataLocation(m1.Proto), withoutDataLocation(m2.Proto)) {
				t.Errorf("converted model differs beyond its data location")
			}
		})
	}
}

func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	exists := filepath.Join(dir, "exists.onnx")
	src, err := os.ReadFile(filepath.Join("..", "importer", "testdata", "dtypes.onnx"))
	convertMust(t, err)
	convertMust(t, os.WriteFile(exists, src, 0o644)) // a model: --force may replace it
	bad := filepath.Join(dir, "bad.onnx")
	convertMust(t, os.WriteFile(bad, []byte("not a model"), 0o644))
	in := filepath.Join("..", "importer", "testdata", "view_dyn13.onnx")
	cases := []struct {
		desc string
		args []string
		want string
	}{
		{"one arg", []string{in}, "expected IN.onnx OUT.onnx, got 1 arguments"},
		{"missing input", []string{filepath.Join(dir, "none.onnx"), filepath.Join(dir, "o.onnx")}, "none.onnx: no such file"},
		{"not a model", []string{bad, filepath.Join(dir, "o.onnx")}, "bad.onnx: not an ONNX model"},
		{"exists", []string{in, exists}, "exists.onnx: file exists (use --force to replace it)"},
		{"input", []string{in, in}, "that is the input IN.onnx"},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			_, err := runConvert(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	if _, err := runConvert(t, "--force", in, exists); err != nil {
		t.Errorf("--force: %v", err)
	}
}

func convertMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// withoutDataLocation clears where each initializer keeps its data
// (raw_data, data_location, external_data): what convert may move.
func withoutDataLocation(mp *onnxpb.ModelProto) *onnxpb.ModelProto {
	c := proto.Clone(mp).(*onnxpb.ModelProto)
	for _, tp := range c.Graph.Initializer {
		tp.RawData, tp.DataLocation, tp.ExternalData = nil, nil, nil
	}
	return c
}

// sameTensorBits reports whether a and b have equal types, shapes and
// bit-identical values.
func sameTensorBits(a, b *importer.Tensor) bool {
	if b == nil || a.Type != b.Type || len(a.Shape) != len(b.Shape) {
		return false
	}
	for i := range a.Shape {
		if a.Shape[i] != b.Shape[i] {
			return false
		}
	}
	x, y := a.Float64s(), b.Float64s()
	for i := range x {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
			return false
		}
	}
	p, q := a.Int64s(), b.Int64s()
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// TestConvertNeverLosesAFile: convert refuses, with or without --force
// (given before or after the arguments), to write over its input, the
// input's external data file, another model's data file, or through a
// link to /dev; every file in the folder keeps its bytes.
func TestConvertNeverLosesAFile(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"mlp_ext.onnx", "mlp_ext.onnx.data", "view_dyn13.onnx"} {
		b, err := os.ReadFile(filepath.Join("..", "importer", "testdata", f))
		convertMust(t, err)
		convertMust(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	convertMust(t, os.Symlink("/dev/stdout", filepath.Join(dir, "stdout.onnx")))
	snapshot := func() map[string]string {
		out := map[string]string{}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Type()&os.ModeSymlink != 0 { // the link to /dev/stdout: its target's name, never its content
				l, _ := os.Readlink(filepath.Join(dir, e.Name()))
				out[e.Name()] = "link to " + l
				continue
			}
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			out[e.Name()] = string(b)
		}
		return out
	}
	before := snapshot()
	p := func(f string) string { return filepath.Join(dir, f) }
	cases := []struct {
		desc string
		args []string
		want string
	}{
		{"itself", []string{"--force", p("mlp_ext.onnx"), p("mlp_ext.onnx")}, "that is the input IN.onnx"},
		{"itself, flag last", []string{p("mlp_ext.onnx"), p("mlp_ext.onnx"), "--force"}, "that is the input IN.onnx"},
		{"its data file", []string{"--force", p("mlp_ext.onnx"), p("mlp_ext.onnx.data")}, "external data file"},
		{"another model's data file", []string{"--force", p("view_dyn13.onnx"), p("mlp_ext.onnx.data")}, "is not an ONNX model"},
		{"a link into /dev", []string{"--force", p("view_dyn13.onnx"), p("stdout.onnx")}, "a link into /dev or /proc"},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			out, err := runConvert(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v (output %q), want %q", err, out, c.want)
			}
			after := snapshot()
			for name, b := range before {
				if after[name] != b {
					t.Errorf("%s changed", name)
				}
			}
			if len(after) != len(before) {
				t.Errorf("folder holds %d files, had %d", len(after), len(before))
			}
		})
	}
	// Flags after the arguments work for a good conversion too.
	if out, err := runConvert(t, p("view_dyn13.onnx"), p("copy.onnx"), "--force"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
