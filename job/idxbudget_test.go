package job

import (
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/internal/testkit/idxtest"
	"github.com/paretonav/paretonav/models"
)

// writeZerosIDXGz writes a gzip IDX file of unsigned bytes of shape dims,
// all zero, streamed: a few hundred KB on disk for hundreds of MB of data.
func writeZerosIDXGz(t *testing.T, path string, dims []int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	hdr := []byte{0, 0, 8, byte(len(dims))}
	n := 1
	for _, d := range dims {
		hdr = binary.BigEndian.AppendUint32(hdr, uint32(d))
		n *= d
	}
	if _, err := zw.Write(hdr); err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for left := n; left > 0; left -= len(zeros) {
		if _, err := zw.Write(zeros[:min(left, len(zeros))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIDXGzipWithinBudget: under --max-memory 200MB, gzip IDX images
// whose pixels take 518 MB as float32 (a few hundred KB compressed, its
// name not ending in .gz) are refused from the IDX header read through
// gzip, naming the array, the file, its shape and the limit, before the
// body is decompressed; the same file's labels and a small image file are
// read within it.
func TestIDXGzipWithinBudget(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "lenet2.onnx")
	if err := models.WriteModel(model, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	const n = 100000 // 36×36 images: 130 MB of bytes, 518 MB of float32
	big := filepath.Join(dir, "big-images-idx3-ubyte")
	writeZerosIDXGz(t, big, []int{n, 36, 36})
	if st, _ := os.Stat(big); st.Size() > 5e6 {
		t.Fatalf("%s: %d bytes, want well under 5 MB", big, st.Size())
	}
	small := filepath.Join(dir, "small-images-idx3-ubyte.gz")
	if err := os.WriteFile(small, idxtest.Gzip(idxtest.Encode([]int{8, 36, 36}, make([]uint8, 8*36*36))), 0o644); err != nil {
		t.Fatal(err)
	}
	labels := func(n int) string {
		p := filepath.Join(dir, "labels"+strings.Repeat("x", n%7)+".gz")
		writeZerosIDXGz(t, p, []int{n})
		return p
	}
	bigLab, smallLab := labels(n), labels(8)
	for _, tc := range []struct {
		name string
		data []string
		want []string // error substrings; nil: accepted
	}{
		{"small images", []string{"x=" + small, "left=" + smallLab, "right=" + smallLab}, nil},
		{"images too large", []string{"left=" + bigLab, "right=" + bigLab, "pixels=" + big},
			[]string{`array "pixels"`, big, "[100000 1 36 36]", "518 MB", "--max-memory 200MB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := TuneConfig{Model: model, Data: tc.data, Criterion: "left+right", Method: MethodConfig{Name: "png"}, Optimizer: "adam", LRSchedule: "constant", Steps: 1, Batch: 4,
				Out:         filepath.Join(t.TempDir(), "o.onnx"),
				ModelConfig: ModelConfig{Tasks: []string{"left:nll:logp_left:left", "right:nll:logp_right:right"}, BN: "frozen", Maps: []string{"x=pixels"}, MaxMemory: "200MB"}}
			if tc.want == nil {
				cfg.Maps = nil
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := cfg.Prepare(nil)
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 100<<20 {
				t.Errorf("allocated %d MB", grew>>20)
			}
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Prepare: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Prepare accepted it")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
