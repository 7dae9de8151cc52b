package finetune_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/format/idx"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/idxtest"
)

// fortranNPY encodes a little-endian float32 .npy file in Fortran
// (column-major) order: vals are given column by column.
func fortranNPY(shape []int, vals []float32) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	h := fmt.Sprintf("{'descr': '<f4', 'fortran_order': True, 'shape': (%s), }", strings.Join(dims, ", "))
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	b.WriteString(h)
	for _, v := range vals {
		binary.Write(&b, binary.LittleEndian, math.Float32bits(v))
	}
	return b.Bytes()
}

func TestParseSource(t *testing.T) {
	tests := []struct {
		spec    string
		want    finetune.Source
		wantErr string
	}{
		{"d.npz", finetune.Source{Spec: "d.npz", Path: "d.npz"}, ""},
		{" y = labels.idx.gz ", finetune.Source{Spec: "y = labels.idx.gz", Name: "y", Path: "labels.idx.gz"}, ""},
		{"x=img:raw", finetune.Source{Spec: "x=img:raw", Name: "x", Path: "img", Raw: true}, ""},
		{"input.1=dir/a=b.npy", finetune.Source{Spec: "input.1=dir/a=b.npy", Name: "input.1", Path: "dir/a=b.npy"}, ""},
		{"", finetune.Source{}, "empty data source"},
		{"=a.npy", finetune.Source{}, "empty array name"},
		{"x=", finetune.Source{}, "no file"},
		{"x=:raw", finetune.Source{}, "no file"},
		{"nyuv2:nyu/train", finetune.Source{Spec: "nyuv2:nyu/train", Path: "nyu/train", Kind: finetune.KindNYUv2}, ""},
		{" folder: d=1 ", finetune.Source{Spec: "folder: d=1", Path: "d=1", Kind: finetune.KindFolder}, ""},
		{"nyuv2:", finetune.Source{}, "no folder"},
		{"folder: ", finetune.Source{}, "no folder"},
		{"./nyuv2:x.npz", finetune.Source{Spec: "./nyuv2:x.npz", Path: "./nyuv2:x.npz"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := finetune.ParseSource(tc.spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestLoadArrays(t *testing.T) {
	dir := t.TempDir()
	px := []uint8{0, 51, 102, 255, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12} // 4 images 2×2
	scaled := make([]float64, len(px))                                    // px/255 as float32
	rawPx := make([]float64, len(px))                                     // px
	for i, v := range px {
		scaled[i], rawPx[i] = float64(float32(v)/255), float64(v)
	}
	x := importer.NewFloat32("x", []int{4, 1, 2, 2}, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	left := importer.NewInt64("left", []int{4}, []int64{1, 2, 3, 4})
	y := importer.NewFloat32("y", []int{4, 3}, make([]float32, 12))
	files := map[string][]byte{
		"img.idx":    idxtest.Encode([]int{4, 2, 2}, px),
		"img.idx.gz": idxtest.Gzip(idxtest.Encode([]int{4, 2, 2}, px)),
		"lab.idx":    idxtest.Encode([]int{4}, []uint8{7, 0, 9, 3}),
		"lab3.idx":   idxtest.Encode([]int{3}, []uint8{7, 0, 9}),
		"flat.idx":   idxtest.Encode([]int{4, 2}, px[:8]),
		"sbyte.idx":  idxtest.EncodeType(9, []int{4}, []uint8{1, 2, 3, 4}),
		"junk.bin":   []byte("hello, world"),
		"junk.gz":    idxtest.Gzip([]byte("hello, world")),
		"f.npy":      fortranNPY([]int{2, 3}, []float32{1, 4, 2, 5, 3, 6}),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := npz.Write(filepath.Join(dir, "d.npz"), map[string]*importer.Tensor{"x": x, "left": left}); err != nil {
		t.Fatal(err)
	}
	if err := npz.WriteNPY(filepath.Join(dir, "y.npy"), y); err != nil {
		t.Fatal(err)
	}

	// want describes one array of the result.
	type want struct {
		typ   importer.DataType
		shape []int
		vals  []float64
	}
	tests := []struct {
		name    string
		specs   []string // file names relative to dir
		want    map[string]want
		wantErr []string // substrings of the error; nil: no error
		is      error    // the error wraps it, when not nil
	}{
		{"npz", []string{"d.npz"}, map[string]want{
			"x": {importer.Float32, []int{4, 1, 2, 2}, x.Float64s()}, "left": {importer.Int64, []int{4}, []float64{1, 2, 3, 4}}}, nil, nil},
		{"npy", []string{"z=y.npy"}, map[string]want{"z": {importer.Float32, []int{4, 3}, y.Float64s()}}, nil, nil},
		{"npy fortran order", []string{"f=f.npy"}, map[string]want{"f": {importer.Float32, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}}}, nil, nil},
		{"idx images", []string{"x=img.idx"}, map[string]want{"x": {importer.Float32, []int{4, 1, 2, 2}, scaled}}, nil, nil},
		{"idx images gzip", []string{"x=img.idx.gz"}, map[string]want{"x": {importer.Float32, []int{4, 1, 2, 2}, scaled}}, nil, nil},
		{"idx images raw", []string{"x=img.idx:raw"}, map[string]want{"x": {importer.Float32, []int{4, 1, 2, 2}, rawPx}}, nil, nil},
		{"idx labels", []string{"y=lab.idx"}, map[string]want{"y": {importer.Int64, []int{4}, []float64{7, 0, 9, 3}}}, nil, nil},
		{"merge", []string{"d.npz", "z=y.npy", "right=lab.idx", "img=img.idx.gz"}, map[string]want{
			"x":     {importer.Float32, []int{4, 1, 2, 2}, x.Float64s()},
			"left":  {importer.Int64, []int{4}, []float64{1, 2, 3, 4}},
			"z":     {importer.Float32, []int{4, 3}, y.Float64s()},
			"right": {importer.Int64, []int{4}, []float64{7, 0, 9, 3}},
			"img":   {importer.Float32, []int{4, 1, 2, 2}, scaled}}, nil, nil},
		{"no sources", nil, nil, []string{"no data source"}, nil},
		{"empty spec", []string{"d.npz", " "}, nil, []string{"empty data source"}, nil},
		{"missing file", []string{"x=nope.idx"}, nil, []string{`data "x=nope.idx"`, "nope.idx"}, os.ErrNotExist},
		{"missing npz", []string{"nope.npz"}, nil, []string{`data "nope.npz"`}, os.ErrNotExist},
		{"idx without name", []string{"img.idx"}, nil, []string{`data "img.idx"`, "is an IDX file, one unnamed array: give it as NAME="}, nil},
		{"npy without name", []string{"y.npy"}, nil, []string{`data "y.npy"`, "is a .npy array, one unnamed array"}, nil},
		{"npz with name", []string{"a=d.npz"}, nil, []string{`data "a=d.npz"`, "NPZ archive, whose arrays have their own names"}, nil},
		{"duplicate name", []string{"d.npz", "x=img.idx"}, nil,
			[]string{`array "x" comes from two data sources, "d.npz" and "x=img.idx"`}, nil},
		{"count mismatch", []string{"x=img.idx", "left=lab3.idx"}, nil,
			[]string{`array "left" (from "left=lab3.idx") has 3 examples but array "x" (from "x=img.idx") has 4`}, nil},
		{"idx bad element type", []string{"x=sbyte.idx"}, nil, []string{`data "x=sbyte.idx"`, "sbyte.idx", "element type 0x09"}, idx.ErrFormat},
		{"idx bad magic", []string{"x=junk.gz"}, nil, []string{`data "x=junk.gz"`, "magic 68656c6c: want 00 00 <type> <ndim>"}, idx.ErrFormat},
		{"unknown format", []string{"x=junk.bin"}, nil, []string{`data "x=junk.bin"`, "junk.bin", "first bytes", "want an NPZ archive"}, nil},
		{"idx of 2 dimensions", []string{"x=flat.idx"}, nil, []string{"flat.idx", "want 1 (labels [N]) or 3 (images"}, nil},
		{"raw labels", []string{"y=lab.idx:raw"}, nil, []string{"holds labels", ":raw applies to IDX images only"}, nil},
		{"raw npy", []string{"y=y.npy:raw"}, nil, []string{"is a .npy array: :raw applies to IDX images only"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			specs := make([]string, len(tc.specs))
			for i, s := range tc.specs {
				if name, file, ok := strings.Cut(s, "="); ok {
					specs[i] = name + "=" + filepath.Join(dir, file)
				} else if strings.TrimSpace(s) != "" {
					specs[i] = filepath.Join(dir, s)
				} else {
					specs[i] = s
				}
			}
			got, err := finetune.LoadArrays(specs)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error; want one containing %q", tc.wantErr)
				}
				msg := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
				for _, w := range tc.wantErr {
					if !strings.Contains(msg, w) {
						t.Errorf("err = %v, want it to contain %q", msg, w)
					}
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("err = %v, want it to wrap %v", err, tc.is)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names, wantNames []string
			for n := range got {
				names = append(names, n)
			}
			for n := range tc.want {
				wantNames = append(wantNames, n)
			}
			sort.Strings(names)
			sort.Strings(wantNames)
			if !slices.Equal(names, wantNames) {
				t.Fatalf("arrays %v, want %v", names, wantNames)
			}
			for n, w := range tc.want {
				a := got[n]
				if a.Name != n || a.Type != w.typ || !reflect.DeepEqual(a.Shape, w.shape) || !slices.Equal(a.Float64s(), w.vals) {
					t.Errorf("%s: name %q type %v shape %v values %v; want type %v shape %v values %v",
						n, a.Name, a.Type, a.Shape, a.Float64s(), w.typ, w.shape, w.vals)
				}
			}
		})
	}
}

// TestLoadArraysSingleNPZ: a single archive is returned as read, arrays of
// different lengths included (Bind checks the ones a model uses); merged
// with another source, the same archive is checked.
func TestLoadArraysSingleNPZ(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "d.npz")
	arrays := map[string]*importer.Tensor{
		"classes": importer.NewInt64("classes", []int{10}, make([]int64, 10)),
		"x":       importer.NewFloat32("x", []int{4, 2}, make([]float32, 8)),
	}
	if err := npz.Write(p, arrays); err != nil {
		t.Fatal(err)
	}
	if got, err := finetune.LoadArrays([]string{p}); err != nil || len(got) != 2 {
		t.Errorf("single archive: %d arrays, %v; want 2, nil", len(got), err)
	}
	lab := filepath.Join(dir, "lab.idx")
	if err := os.WriteFile(lab, idxtest.Encode([]int{4}, []uint8{1, 2, 3, 4}), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := finetune.LoadArrays([]string{p, "y=" + lab})
	if err == nil || !strings.Contains(err.Error(), `array "x" (from "`+p+`") has 4 examples but array "classes"`) {
		t.Errorf("merged: err = %v, want a count mismatch between x and classes", err)
	}
}

func ExampleLoadArrays() {
	dir, err := os.MkdirTemp("", "sources")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// Two 2×2 images and their labels in MNIST's IDX format, and one
	// more array as a .npy file.
	images, labels, extra := filepath.Join(dir, "images.idx"), filepath.Join(dir, "labels.idx"), filepath.Join(dir, "w.npy")
	os.WriteFile(images, idxtest.Encode([]int{2, 2, 2}, []uint8{0, 51, 102, 255, 0, 0, 0, 0}), 0o644)
	os.WriteFile(labels, idxtest.Encode([]int{2}, []uint8{3, 7}), 0o644)
	npz.WriteNPY(extra, importer.NewFloat32("w", []int{2}, []float32{0.5, 2}))

	arrays, err := finetune.LoadArrays([]string{"x=" + images, "y=" + labels, "weight=" + extra})
	if err != nil {
		log.Fatal(err)
	}
	x, y, w := arrays["x"], arrays["y"], arrays["weight"]
	fmt.Println(x.Type, x.Shape, x.F32[:4])
	fmt.Println(y.Type, y.Shape, y.I64)
	fmt.Println(w.Name, w.F32)
	// Output:
	// FLOAT [2 1 2 2] [0 0.2 0.4 1]
	// INT64 [2] [3 7]
	// weight [0.5 2]
}
