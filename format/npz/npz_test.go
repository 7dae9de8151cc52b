package npz

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// systemPython is the interpreter known to have numpy here; the python3
// first on PATH may not.
const systemPython = "/usr/bin/python3"

// requireNumpy skips t when systemPython cannot import numpy.
func requireNumpy(t *testing.T) {
	t.Helper()
	if err := exec.Command(systemPython, "-c", "import numpy").Run(); err != nil {
		t.Skipf("skipping: %s with numpy is not available: %v", systemPython, err)
	}
}

func TestReadNumpyWritten(t *testing.T) {
	got, err := Read(filepath.Join("testdata", "numpy_written.npz"))
	if err != nil {
		t.Fatal(err)
	}
	ramp := func(scale, shift float64) []float64 {
		out := make([]float64, 6)
		for i := range out {
			out[i] = float64(i)*scale + shift
		}
		return out
	}
	tests := []struct {
		name  string
		typ   importer.DataType
		shape []int
		want  []float64
	}{
		{"f4", importer.Float32, []int{2, 3}, ramp(0.5, 0)},
		{"f8", importer.Float64, []int{2, 3}, ramp(0.25, 0)},
		{"f2", importer.Float16, []int{2, 3}, ramp(1, 0)},
		{"i8", importer.Int64, []int{2, 3}, ramp(1, -3)},
		{"i4", importer.Int32, []int{2, 3}, ramp(1, -3)},
		{"i2", onnxpb.TensorProto_INT16, []int{2, 3}, ramp(1, -3)},
		{"i1", importer.Int8, []int{2, 3}, ramp(1, -3)},
		{"u1", importer.Uint8, []int{2, 3}, ramp(1, 0)},
		{"b1", importer.Bool, []int{2, 3}, []float64{0, 1, 0, 1, 0, 1}},
		{"fortran", importer.Float32, []int{2, 3}, ramp(1, 0)},
		{"bigendian", importer.Int32, []int{2, 3}, ramp(1, 0)},
		{"scalar", importer.Float32, []int{}, []float64{2.5}},
		{"empty", importer.Float32, []int{0, 3}, []float64{}},
		{"grad/left/conv1.weight", importer.Float32, []int{2, 3}, ramp(1, 0)},
	}
	if len(got) != len(tests) {
		t.Errorf("read %d arrays, want %d", len(got), len(tests))
	}
	for _, tc := range tests {
		a, ok := got[tc.name]
		if !ok {
			t.Errorf("array %q missing; have %v", tc.name, keys(got))
			continue
		}
		if a.Name != tc.name || a.Type != tc.typ || !reflect.DeepEqual(a.Shape, tc.shape) {
			t.Errorf("%s: name %q type %v shape %v, want %q %v %v", tc.name, a.Name, a.Type, a.Shape, tc.name, tc.typ, tc.shape)
		}
		if v := a.Float64s(); !reflect.DeepEqual(v, tc.want) {
			t.Errorf("%s: values %v, want %v", tc.name, v, tc.want)
		}
	}
}

func keys(m map[string]*importer.Tensor) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// sample returns one tensor of every element type Write supports.
func sample() map[string]*importer.Tensor {
	return map[string]*importer.Tensor{
		"x":                      importer.NewFloat32("x", []int{2, 1, 2, 2}, []float32{0, 0.25, 0.5, 1, -1, 3.5, 1e-7, 7}),
		"left":                   importer.NewInt64("left", []int{3}, []int64{0, 9, -1 << 40}),
		"f64":                    {Type: importer.Float64, Shape: []int{2}, F64: []float64{1.0 / 3, -2e300}},
		"f16":                    {Type: importer.Float16, Shape: []int{2}, F32: []float32{0.5, -2}},
		"i32":                    {Type: importer.Int32, Shape: []int{2}, I64: []int64{-7, 1 << 30}},
		"i16":                    {Type: onnxpb.TensorProto_INT16, Shape: []int{1}, I64: []int64{-300}},
		"i8":                     {Type: importer.Int8, Shape: []int{2}, I64: []int64{-128, 127}},
		"u8":                     {Type: importer.Uint8, Shape: []int{2}, I64: []int64{0, 255}},
		"u16":                    {Type: onnxpb.TensorProto_UINT16, Shape: []int{1}, I64: []int64{65535}},
		"u32":                    {Type: onnxpb.TensorProto_UINT32, Shape: []int{1}, I64: []int64{1 << 31}},
		"u64":                    {Type: onnxpb.TensorProto_UINT64, Shape: []int{1}, I64: []int64{1 << 62}},
		"mask":                   {Type: importer.Bool, Shape: []int{3}, I64: []int64{1, 0, 1}},
		"scalar":                 {Type: importer.Float32, Shape: []int{}, F32: []float32{4}},
		"grad/left/conv1.weight": importer.NewFloat32("", []int{1, 3}, []float32{1, 2, 3}),
	}
}

func TestRoundTrip(t *testing.T) {
	for _, opt := range []Options{{}, {Compress: true}} {
		path := filepath.Join(t.TempDir(), "a.npz")
		in := sample()
		if err := WriteOptions(path, in, opt); err != nil {
			t.Fatal(err)
		}
		out, err := Read(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(in) {
			t.Errorf("compress=%v: read %d arrays, want %d", opt.Compress, len(out), len(in))
		}
		for name, a := range in {
			b := out[name]
			if b == nil {
				t.Errorf("compress=%v: %q missing", opt.Compress, name)
				continue
			}
			want := *a
			want.Name = name
			if !reflect.DeepEqual(&want, b) {
				t.Errorf("compress=%v: %q = %+v, want %+v", opt.Compress, name, b, &want)
			}
		}
	}
}

func TestNPYRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.npy")
	in := importer.NewFloat32("w", []int{2, 2}, []float32{1, 2, 3, 4})
	if err := WriteNPY(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadNPY(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("got %+v, want %+v", out, in)
	}
	single, err := ReadNPY(filepath.Join("testdata", "single.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if want := importer.NewInt64("single", []int{2, 2}, []int64{0, 1, 2, 3}); !reflect.DeepEqual(single, want) {
		t.Errorf("single.npy = %+v, want %+v", single, want)
	}
}

// TestNumpyReadsOurs has numpy load a file we wrote and check every dtype,
// shape and value, including the names containing "/".
func TestNumpyReadsOurs(t *testing.T) {
	requireNumpy(t)
	path := filepath.Join(t.TempDir(), "ours.npz")
	if err := Write(path, sample()); err != nil {
		t.Fatal(err)
	}
	script := `
import sys, numpy as np
z = np.load(sys.argv[1])
want = {
  "x": ("float32", (2, 1, 2, 2), [0, 0.25, 0.5, 1, -1, 3.5, np.float32(1e-7), 7]),
  "left": ("int64", (3,), [0, 9, -(1 << 40)]),
  "f64": ("float64", (2,), [1.0 / 3, -2e300]),
  "f16": ("float16", (2,), [0.5, -2]),
  "i32": ("int32", (2,), [-7, 1 << 30]),
  "i16": ("int16", (1,), [-300]),
  "i8": ("int8", (2,), [-128, 127]),
  "u8": ("uint8", (2,), [0, 255]),
  "u16": ("uint16", (1,), [65535]),
  "u32": ("uint32", (1,), [1 << 31]),
  "u64": ("uint64", (1,), [1 << 62]),
  "mask": ("bool", (3,), [True, False, True]),
  "scalar": ("float32", (), [4]),
  "grad/left/conv1.weight": ("float32", (1, 3), [1, 2, 3]),
}
assert sorted(z.files) == sorted(want), z.files
for k, (dt, shape, vals) in want.items():
    a = z[k]
    assert str(a.dtype) == dt, (k, a.dtype)
    assert a.shape == shape, (k, a.shape)
    assert np.array_equal(a.ravel(), np.array(vals, dtype=dt)), (k, a)
print("ok")
`
	out, err := exec.Command(systemPython, "-c", script, path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("numpy check failed: %v\n%s", err, out)
	}
}

// TestReadsNumpyNow has numpy write a file at test time (the fixture covers
// the same ground without python) and reads it back.
func TestReadsNumpyNow(t *testing.T) {
	requireNumpy(t)
	path := filepath.Join(t.TempDir(), "np.npz")
	script := `
import sys, numpy as np
np.savez_compressed(sys.argv[1], **{"grad/right/fc.bias": np.arange(12, dtype="<f4").reshape(3, 4), "y": np.array([3, 1], dtype="<i8")})
`
	if out, err := exec.Command(systemPython, "-c", script, path).CombinedOutput(); err != nil {
		t.Fatalf("numpy failed: %v\n%s", err, out)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	b := got["grad/right/fc.bias"]
	if b == nil || b.Type != importer.Float32 || !reflect.DeepEqual(b.Shape, []int{3, 4}) || b.F32[11] != 11 {
		t.Errorf("grad/right/fc.bias = %+v", b)
	}
	if y := got["y"]; y == nil || !reflect.DeepEqual(y.I64, []int64{3, 1}) || y.Type != importer.Int64 {
		t.Errorf("y = %+v", y)
	}
}

func TestWriteIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.npz")
	if err := Write(path, sample()); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]*importer.Tensor{
		"a":    importer.NewFloat32("a", []int{1}, []float32{1}),
		"bad":  {Type: importer.Float32, Shape: []int{3}, F32: []float32{1}},
		"zzzz": importer.NewFloat32("z", []int{1}, []float32{1}),
	}
	err = Write(path, bad)
	if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), path) {
		t.Fatalf("writing a short array: err = %v, want an ErrFormat naming %s and \"bad\"", err, path)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("a failed Write changed the existing file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("folder holds %v after a failed write, want only a.npz", names)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	notZip := filepath.Join(dir, "notzip.npz")
	if err := os.WriteFile(notZip, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		read    func() error
		wantSub []string
		wantErr error
	}{
		{"missing file", func() error { _, err := Read(filepath.Join(dir, "nope.npz")); return err }, []string{"nope.npz"}, nil},
		{"not a zip", func() error { _, err := Read(notZip); return err }, []string{"notzip.npz"}, nil},
		{"complex dtype", func() error { _, err := Read(filepath.Join("testdata", "bad_dtype.npz")); return err },
			[]string{"bad_dtype.npz", `array "c"`, "<c8"}, ErrFormat},
		{"npy not npy", func() error { _, err := ReadNPY(notZip); return err }, []string{"notzip.npz", "header"}, ErrFormat},
		{"unknown write type", func() error {
			return Write(filepath.Join(dir, "x.npz"), map[string]*importer.Tensor{"s": {Type: onnxpb.TensorProto_STRING}})
		}, []string{"x.npz", `"s"`}, ErrFormat},
		{"nil tensor", func() error { return Write(filepath.Join(dir, "y.npz"), map[string]*importer.Tensor{"n": nil}) },
			[]string{"y.npz", `"n"`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.read()
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tc.wantSub {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v is not %v", err, tc.wantErr)
			}
		})
	}
}

func TestTruncatedData(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "single.npy"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "short.npy")
	if err := os.WriteFile(path, data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadNPY(path)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("err = %v, want a truncation ErrFormat", err)
	}
}

// npyHeader builds a version 1.0 preamble around dict (a newline is added).
func npyHeader(dict string) []byte {
	h := []byte("\x93NUMPY\x01\x00")
	n := len(dict) + 1
	return append(append(h, byte(n), byte(n>>8)), dict+"\n"...)
}

func TestMalformedNPY(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		content []byte
		wantSub string
	}{
		{"no newline", []byte("\x93NUMPY\x01\x00\x05\x00abcde"), "newline"},
		{"not a dict", npyHeader("abcd"), "dictionary"},
		{"empty dict", npyHeader("{}"), "header"},
		{"bad shape", npyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2x), }"), "header"},
		{"bad version", []byte("\x93NUMPY\x07\x00\x05\x00{}   \n"), "version 7.0"},
		{"huge header", []byte("\x93NUMPY\x02\x00\xff\xff\xff\x7f{"), "length"},
		{"short header", []byte("\x93NUMPY\x01\x00\x40\x00{'descr'"), "truncated"},
		{"huge shape, no data", npyHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000,), }"), "truncated"},
		{"overflowing shape", npyHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"), "too large"},
		{"bad bool", append(npyHeader("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }"), 0, 7), "bool value 7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".npy")
			if err := os.WriteFile(p, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadNPY(p)
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.wantSub) || !strings.Contains(err.Error(), p) {
				t.Errorf("err = %v, want an ErrFormat naming %s and mentioning %q", err, p, tc.wantSub)
			}
		})
	}
}

// FuzzDecode checks that no input makes decode panic, and that whatever
// it accepts encodes and decodes back to the same tensor.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"single.npy"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(npyHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1), }"))
	f.Add([]byte("\x93NUMPY\x01\x00\x05\x00abcde"))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := decode(bytes.NewReader(b), "a", nil)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := encode(&buf, x); err != nil {
			t.Fatalf("decoded %+v but cannot encode it: %v", x, err)
		}
		y, err := decode(&buf, "a", nil)
		if err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
		if !reflect.DeepEqual(x.Shape, y.Shape) || x.Type != y.Type || x.Len() != y.Len() {
			t.Fatalf("round trip changed %+v into %+v", x, y)
		}
	})
}
