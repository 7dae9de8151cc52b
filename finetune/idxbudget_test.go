package finetune_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/format/idx"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/idxtest"
)

// TestIDXWithinBudget: an IDX file, raw or gzip (whatever its name), is
// weighed by the shape its header gives before its body is read: a
// header announcing more than the bound is refused with a *npz.SizeError
// naming the array (not the file), even when no body follows; within the
// bound the values are read and converted as before, and arrays read
// from earlier sources count against the same bound. A .npy file's
// refusal names the array it is bound to, not the file's base name.
func TestIDXWithinBudget(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Headers only: the bodies of 1e6 images and labels are missing.
	hugeImg := idxtest.Encode([]int{1000000, 28, 28}, nil)
	hugeLab := idxtest.Encode([]int{1000000}, nil)
	img := idxtest.Encode([]int{2, 2, 2}, []uint8{0, 51, 102, 255, 1, 2, 3, 4})
	lab := idxtest.Encode([]int{2}, []uint8{3, 7})
	files := map[string]string{
		"hugeImgGz":  write("huge-images", idxtest.Gzip(hugeImg)),
		"hugeImgRaw": write("huge-images-idx3-ubyte", hugeImg),
		"hugeLabGz":  write("huge-labels.gz", idxtest.Gzip(hugeLab)),
		"imgGz":      write("images.gz", idxtest.Gzip(img)),
		"lab":        write("labels", lab),
	}
	npy := filepath.Join(dir, "train_labels.npy")
	if err := npz.WriteNPY(npy, importer.NewInt64("train_labels", []int{1000}, make([]int64, 1000))); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		specs []string
		max   int64
		want  []string // error substrings; nil: accepted
	}{
		{"gzip images over", []string{"x=" + files["hugeImgGz"]}, 1e6, []string{`array "x"`, "[1000000 1 28 28]", "float32", "3.1 GB", "1 MB allowed (--max-memory 1MB)"}},
		{"raw images over", []string{"pixels=" + files["hugeImgRaw"]}, 1e6, []string{`array "pixels"`, "[1000000 1 28 28]"}},
		{"gzip labels over", []string{"y=" + files["hugeLabGz"]}, 1e6, []string{`array "y"`, "[1000000]", "int64", "8 MB"}},
		{"earlier sources count", []string{"y=" + files["lab"], "x=" + files["imgGz"]}, 40, []string{`array "x"`, "beside the 16 bytes read before it", "40 bytes allowed"}},
		{"npy labels over", []string{"y=" + files["lab"], "target=" + npy}, 4000, []string{`array "target"`, "[1000]", "8000 bytes", "beside the 16 bytes read before it", "4000 bytes allowed"}},
		{"within", []string{"y=" + files["lab"], "x=" + files["imgGz"]}, 48, nil},
		{"no bound", []string{"y=" + files["lab"], "x=" + files["imgGz"]}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arrays, err := finetune.LoadArraysWithin(tc.specs, finetune.LoadOptions{MaxBytes: tc.max, From: "--max-memory 1MB"})
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				x, y := arrays["x"], arrays["y"]
				if want := []float32{0, 0.2, 0.4, 1, 1.0 / 255, 2.0 / 255, 3.0 / 255, 4.0 / 255}; !slices.Equal(x.F32, want) || len(x.Shape) != 4 || x.Shape[1] != 1 {
					t.Errorf("x = %v %v, want [2 1 2 2] %v", x.Shape, x.F32, want)
				}
				if !slices.Equal(y.I64, []int64{3, 7}) {
					t.Errorf("y = %v, want [3 7]", y.I64)
				}
				return
			}
			var se *npz.SizeError
			if !errors.As(err, &se) {
				t.Fatalf("error %v: want a *npz.SizeError", err)
			}
			if errors.Is(err, idx.ErrFormat) {
				t.Errorf("error %v: the missing body was read", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
