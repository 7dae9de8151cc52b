package npz

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/importer"
)

// TestReadHeader: the header of a .npy file (numpy's own single.npy, and
// files of each decoded type), read without its values; a file holding
// fewer or more value bytes than its header announces is an error naming
// it and both counts.
func TestReadHeader(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, tt *importer.Tensor) string {
		p := filepath.Join(dir, name)
		if err := WriteNPY(p, tt); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f32 := write("f32.npy", importer.NewFloat32("", []int{2, 3, 4}, make([]float32, 24)))
	f64 := write("f64.npy", &importer.Tensor{Type: importer.Float64, Shape: []int{5}, F64: make([]float64, 5)})
	i64 := write("i64.npy", importer.NewInt64("", []int{}, []int64{7}))
	short := write("short.npy", importer.NewFloat32("", []int{4}, make([]float32, 4)))
	st, _ := os.Stat(short)
	os.Truncate(short, st.Size()-4)
	long := write("long.npy", importer.NewFloat32("", []int{4}, make([]float32, 4)))
	if f, err := os.OpenFile(long, os.O_APPEND|os.O_WRONLY, 0); err == nil {
		f.Write([]byte{0})
		f.Close()
	}
	notNPY := filepath.Join(dir, "text.npy")
	os.WriteFile(notNPY, []byte("hello"), 0o644)
	for _, tc := range []struct {
		path string
		want Header
		err  []string
	}{
		{filepath.Join("testdata", "single.npy"), Header{Shape: []int{2, 2}, Type: importer.Int64, Descr: "<i8", DataBytes: 32}, nil},
		{f32, Header{Shape: []int{2, 3, 4}, Type: importer.Float32, Descr: "<f4", DataBytes: 96}, nil},
		{f64, Header{Shape: []int{5}, Type: importer.Float64, Descr: "<f8", DataBytes: 40}, nil},
		{i64, Header{Shape: []int{}, Type: importer.Int64, Descr: "<i8", DataBytes: 8}, nil},
		{short, Header{}, []string{short, "12 bytes of values for shape [4] of <f4", "announces 16"}},
		{long, Header{}, []string{long, "17 bytes of values", "announces 16"}},
		{notNPY, Header{}, []string{notNPY, "not a .npy"}},
		{filepath.Join(dir, "none.npy"), Header{}, []string{"none.npy", "no such file"}},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			h, err := ReadHeader(tc.path)
			if tc.err != nil {
				if err == nil {
					t.Fatalf("no error; want %q", tc.err)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil || !reflect.DeepEqual(h, tc.want) {
				t.Errorf("got %+v, %v; want %+v", h, err, tc.want)
			}
		})
	}
}

// TestDecodeNPYNeverMaps: a float32 .npy large enough that ReadNPY maps it
// is decoded into memory by DecodeNPY, with the same values.
func TestDecodeNPYNeverMaps(t *testing.T) {
	n := int(MapMinBytes/4) + 1
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i % 97)
	}
	p := filepath.Join(t.TempDir(), "big.npy")
	if err := WriteNPY(p, importer.NewFloat32("", []int{n}, v)); err != nil {
		t.Fatal(err)
	}
	mapped, err := ReadNPY(p)
	if err != nil || !Mapped(mapped) {
		t.Fatalf("ReadNPY: mapped %v, %v; want the file mapped", Mapped(mapped), err)
	}
	got, err := DecodeNPY(p)
	if err != nil {
		t.Fatal(err)
	}
	if Mapped(got) || !reflect.DeepEqual(got.F32, v) || got.Name != "big" {
		t.Errorf("DecodeNPY: mapped %v, name %q, values equal %v", Mapped(got), got.Name, reflect.DeepEqual(got.F32, v))
	}
}
