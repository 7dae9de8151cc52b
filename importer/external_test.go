package importer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// copyExt copies the external-data fixture into a new folder and returns
// the model's path there.
func copyExt(t *testing.T, dir string) string {
	t.Helper()
	for _, f := range []string{"mlp_ext.onnx", "mlp_ext.onnx.data"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "mlp_ext.onnx")
}

func TestExternalData(t *testing.T) {
	m, err := Load("testdata/mlp_ext.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if !m.HasExternalData() {
		t.Fatal("HasExternalData = false for mlp_ext.onnx")
	}
	inits, err := m.Initializers()
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]int{"w1": {4, 8}, "b1": {8}, "w2": {8, 2}, "shape": {2}}
	for name, want := range shapes {
		if got := inits[name]; got == nil || !slices.Equal(got.Shape, want) {
			t.Errorf("%s: %v, want shape %v", name, got, want)
		}
	}
	if s := inits["shape"].I64; len(s) != 2 || s[0] != -1 || s[1] != 4 {
		t.Errorf("shape = %v, want [-1 4]", s)
	}
	// From bytes there is no folder to read from.
	b, _ := os.ReadFile("testdata/mlp_ext.onnx")
	mb, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mb.Initializers(); err == nil || !strings.Contains(err.Error(), "not loaded from a folder") {
		t.Errorf("Decode then Initializers: err = %v", err)
	}
}

// TestExternalDataRejected rewrites the fixture's external reference of w1
// in each unsafe or inconsistent way and checks that Load refuses it,
// naming the initializer and the reason.
func TestExternalDataRejected(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.data")
	if err := os.WriteFile(secret, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		desc  string
		setup func(dir string) // extra files in the model's folder
		kv    map[string]string
		want  string
	}{
		{"absolute", nil, map[string]string{"location": secret}, "is absolute"},
		{"dotdot", nil, map[string]string{"location": "../secret.data"}, `contains ".."`},
		{"inner dotdot", nil, map[string]string{"location": "sub/../../secret.data"}, `contains ".."`},
		{"backslash dotdot", nil, map[string]string{"location": `..\secret.data`}, `contains ".."`},
		{"symlink out", func(dir string) {
			must(t, os.Symlink(secret, filepath.Join(dir, "link.data")))
		}, map[string]string{"location": "link.data"}, "outside the model's folder"},
		{"symlinked folder out", func(dir string) {
			must(t, os.Symlink(outside, filepath.Join(dir, "sub")))
		}, map[string]string{"location": "sub/secret.data"}, "outside the model's folder"},
		{"missing file", nil, map[string]string{"location": "nope.data"}, "no such file"},
		{"no location", nil, map[string]string{"offset": "0"}, "no location"},
		{"bad offset", nil, map[string]string{"location": "mlp_ext.onnx.data", "offset": "x"}, `offset "x" is not a non-negative integer`},
		{"negative length", nil, map[string]string{"location": "mlp_ext.onnx.data", "length": "-4"}, `length "-4" is not`},
		{"offset beyond", nil, map[string]string{"location": "mlp_ext.onnx.data", "offset": "100000"}, "offset 100000 is beyond the file's 224 bytes"},
		{"length beyond", nil, map[string]string{"location": "mlp_ext.onnx.data", "offset": "200", "length": "128"}, "offset 200 + length 128 is beyond the file's 224 bytes"},
		{"length short", nil, map[string]string{"location": "mlp_ext.onnx.data", "offset": "0", "length": "64"}, "needs 128"},
		{"folder", func(dir string) {
			must(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
		}, map[string]string{"location": "d"}, "not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			dir := t.TempDir()
			path := copyExt(t, dir)
			if c.setup != nil {
				c.setup(dir)
			}
			rewriteExternal(t, path, "w1", c.kv)
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `initializer "w1"`) {
				t.Errorf("Load: err = %v, want one naming initializer \"w1\" with %q", err, c.want)
			}
		})
	}
}

// TestExternalSymlinkInside checks that a symbolic link staying inside
// the model's folder is followed.
func TestExternalSymlinkInside(t *testing.T) {
	dir := t.TempDir()
	path := copyExt(t, dir)
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(t, os.Symlink(filepath.Join(dir, "mlp_ext.onnx.data"), filepath.Join(dir, "sub", "w.data")))
	m0, err := Load(path)
	must(t, err)
	want, err := m0.Initializers()
	must(t, err)
	off := externalOffset(t, m0, "w1")
	rewriteExternal(t, path, "w1", map[string]string{"location": "sub/w.data", "offset": strconv.Itoa(off), "length": "128"})
	m, err := Load(path)
	must(t, err)
	got, err := m.Initializers()
	must(t, err)
	if !sameBits(got["w1"], want["w1"]) {
		t.Errorf("w1 through a symlink differs")
	}
}

func externalOffset(t *testing.T, m *Model, name string) int {
	for _, tp := range m.Proto.Graph.Initializer {
		if tp.GetName() == name {
			r, err := parseExternal(tp)
			must(t, err)
			return int(r.offset)
		}
	}
	t.Fatalf("no initializer %q", name)
	return 0
}

// rewriteExternal replaces the external_data entries of initializer name
// in the model file at path.
func rewriteExternal(t *testing.T, path, name string, kv map[string]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	var mp onnxpb.ModelProto
	must(t, proto.Unmarshal(b, &mp))
	for _, tp := range mp.Graph.Initializer {
		if tp.GetName() != name {
			continue
		}
		tp.ExternalData = nil
		for _, k := range sortedKeys(kv) {
			tp.ExternalData = append(tp.ExternalData, &onnxpb.StringStringEntryProto{Key: proto.String(k), Value: proto.String(kv[k])})
		}
	}
	must(t, os.WriteFile(path, marshal(t, &mp), 0o644))
}

func sortedKeys(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
