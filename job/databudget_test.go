package job

import (
	"archive/zip"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models"
)

// writeZerosNPZ writes a compressed NPZ at path holding arrays and one
// more float32 array of zeros named big of shape bigShape, streamed (the
// zeros are never held in memory): a few MB on disk for GB of values.
func writeZerosNPZ(t *testing.T, path string, arrays map[string]*importer.Tensor, big string, bigShape []int) {
	t.Helper()
	small := filepath.Join(t.TempDir(), "small.npz")
	if err := npz.Write(small, arrays); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(small)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
	for _, e := range zr.File {
		if err := zw.Copy(e); err != nil {
			t.Fatal(err)
		}
	}
	w, err := zw.CreateHeader(&zip.FileHeader{Name: big + ".npy", Method: zip.Deflate})
	if err != nil {
		t.Fatal(err)
	}
	dims := make([]string, len(bigShape))
	n := 1
	for i, d := range bigShape {
		dims[i], n = fmt.Sprint(d), n*d
	}
	dict := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%s,), }", strings.Join(dims, ", "))
	pad := 64 - (10+len(dict)+1)%64
	dict += strings.Repeat(" ", pad) + "\n"
	hdr := append([]byte("\x93NUMPY\x01\x00"), binary.LittleEndian.AppendUint16(nil, uint16(len(dict)))...)
	if _, err := w.Write(append(hdr, dict...)); err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for left := 4 * n; left > 0; left -= len(zeros) {
		if _, err := w.Write(zeros[:min(left, len(zeros))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDataWithinBudget: under --max-memory 500MB, an NPZ whose extra
// 1.55 GB array of zeros (a few MB compressed) the model does not read
// trains without that array ever being decoded, and the same array as
// the model's input (--map x=junk) is refused from its header, naming
// it, before any memory is allocated for it.
func TestDataWithinBudget(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "lenet2.onnx")
	if err := models.WriteModel(model, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	const n = 300000 // examples of 36×36 float32: 1.55 GB
	lab := importer.NewInt64("left", []int{8}, make([]int64, 8))
	x := importer.NewFloat32("x", []int{8, 1, 36, 36}, make([]float32, 8*36*36))
	unused := filepath.Join(dir, "unused.npz")
	writeZerosNPZ(t, unused, map[string]*importer.Tensor{"x": x, "left": lab, "right": lab}, "junk", []int{n, 1, 36, 36})
	if st, _ := os.Stat(unused); st.Size() > 20e6 {
		t.Fatalf("%s: %d bytes, want a few MB", unused, st.Size())
	}
	for _, tc := range []struct {
		name string
		maps []string
		want []string // error substrings; nil: accepted
	}{
		{"unused array", nil, nil},
		{"array too large", []string{"x=junk"}, []string{`array "junk"`, "[300000 1 36 36]", "1.6 GB", "--max-memory 500MB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := TuneConfig{Model: model, Data: []string{unused}, Criterion: "left+right", Method: MethodConfig{Name: "png"}, Optimizer: "adam", LRSchedule: "constant", Steps: 1, Batch: 4,
				Out:         filepath.Join(t.TempDir(), "o.onnx"),
				ModelConfig: ModelConfig{Tasks: []string{"left:nll:logp_left:left", "right:nll:logp_right:right"}, BN: "frozen", Maps: tc.maps, MaxMemory: "500MB"}}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := cfg.Prepare(nil)
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 200<<20 {
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
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestMappedDataOverBudget: a .npy of float32 model inputs larger than
// --max-memory (300 MB of zeros in a sparse file, under 200MB) is mapped
// from its file, not read into memory: tune prepares within the limit,
// the data taking no part of the plan.
func TestMappedDataOverBudget(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "lenet2.onnx")
	if err := models.WriteModel(model, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	const n = 57870 // 36×36 float32 examples: 300 MB
	xPath := filepath.Join(dir, "x.npy")
	dict := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 1, 36, 36), }", n)
	dict += strings.Repeat(" ", 64-(10+len(dict)+1)%64) + "\n"
	hdr := append([]byte("\x93NUMPY\x01\x00"), binary.LittleEndian.AppendUint16(nil, uint16(len(dict)))...)
	f, err := os.Create(xPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(hdr, dict...)); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(len(hdr)+len(dict)) + 4*n*36*36); err != nil {
		t.Fatal(err)
	}
	f.Close()
	lab := importer.NewInt64("left", []int{n}, make([]int64, n))
	for _, name := range []string{"left", "right"} {
		if err := npz.WriteNPY(filepath.Join(dir, name+".npy"), lab); err != nil {
			t.Fatal(err)
		}
	}
	cfg := TuneConfig{Model: model, Data: []string{"x=" + xPath, "left=" + filepath.Join(dir, "left.npy"), "right=" + filepath.Join(dir, "right.npy")},
		Criterion: "left+right", Method: MethodConfig{Name: "png"}, Optimizer: "adam", LRSchedule: "constant", Steps: 1, Batch: 256,
		Out:         filepath.Join(t.TempDir(), "o.onnx"),
		ModelConfig: ModelConfig{Tasks: []string{"left:nll:logp_left:left", "right:nll:logp_right:right"}, BN: "frozen", MaxMemory: "200MB"}}
	job, err := cfg.Prepare(nil)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if !npz.Mapped(job.Train.Arrays["x"]) {
		t.Errorf("x is not mapped from its file")
	}
	if job.Memory.Data > 10e6 || job.Memory.Total() > 200e6 {
		t.Errorf("plan: data %d bytes, total %d; want the mapped x out of it, within 200 MB", job.Memory.Data, job.Memory.Total())
	}
}
