package job

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/models"
)

// quickNPY writes a .npy file of little-endian values without
// npz.WriteNPY's sync (thousands of small files).
func quickNPY[T float32 | float64](t *testing.T, path, descr string, shape []int, v []T) {
	t.Helper()
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s,), }", descr, strings.Join(dims, ", "))
	dict += strings.Repeat(" ", 64-(10+len(dict)+1)%64) + "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), binary.LittleEndian.AppendUint16(nil, uint16(len(dict)))...)
	b = append(b, dict...)
	b, err := binary.Append(b, binary.LittleEndian, v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeNYUSplit writes n examples of an NYUv2 split in MTAN's layout
// (channels last) of H×W under dir: labels 0..12 with −1 (float64, as
// MTAN stores them), images, depths and normals (float32) that vary. label, when set, replaces example i's label.
func writeNYUSplit(t *testing.T, dir string, n, H, W int, label func(i int, v []float64)) {
	t.Helper()
	for _, s := range []string{"image", "label", "depth", "normal"} {
		if err := os.MkdirAll(filepath.Join(dir, s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		file := func(s string) string { return filepath.Join(dir, s, fmt.Sprintf("%d.npy", i)) }
		img := make([]float32, H*W*3)
		for k := range img {
			img[k] = float32((i*3+k)%11) / 10
		}
		lab := make([]float64, H*W)
		dep := make([]float32, H*W)
		nrm := make([]float32, H*W*3)
		for k := range lab {
			lab[k] = float64((i+k)%14 - 1)
			dep[k] = 0.5 + float32((i+k)%7)
		}
		for k := range nrm {
			nrm[k] = float32((i+k)%5)/4 - 0.5
		}
		if label != nil {
			label(i, lab)
		}
		quickNPY(t, file("image"), "<f4", []int{H, W, 3}, img)
		quickNPY(t, file("label"), "<f8", []int{H, W}, lab)
		quickNPY(t, file("depth"), "<f4", []int{H, W, 1}, dep)
		quickNPY(t, file("normal"), "<f4", []int{H, W, 3}, nrm)
	}
}

func nyuTune(t *testing.T, dir, data, val string) TuneConfig {
	model := filepath.Join(dir, "mtan.onnx")
	if _, err := os.Stat(model); err != nil {
		if err := models.WriteModel(model, models.MTAN(models.MTANConfig{Width: 2, InputHeight: 64, InputWidth: 64, Seed: 1})); err != nil {
			t.Fatal(err)
		}
	}
	cfg := TuneConfig{Model: model, Data: []string{data}, Criterion: "seg*normal/(0.001+depth)",
		Method: MethodConfig{Name: "png"}, Optimizer: "adam", LRSchedule: "constant", LR: 1e-4, Steps: 2, Batch: 2,
		Out: filepath.Join(t.TempDir(), "out.onnx"),
		ModelConfig: ModelConfig{Tasks: []string{"seg:nll:seg_logp:label:ignore_index=-1", "depth:depth_l1:depth:depth",
			"normal:normal_cos:normal:normal"}, Maps: []string{"x=image"}, BN: "frozen", MaxMemory: "100MB"}}
	if val != "" {
		cfg.Val = []string{val}
	}
	return cfg
}

// TestTuneNYUv2FolderOverBudget: an NYUv2 split in MTAN's layout whose
// examples take 118 MB as read (800 examples of 64×64) tunes a narrow
// MTAN under --max-memory 100MB, with a validation split read the same
// way: the plan counts one decoded file for the data, not the set, and
// the data held at once while the run read its batches (counted by the
// folder) is one batch and one file.
func TestTuneNYUv2FolderOverBudget(t *testing.T) {
	const n, H, W = 800, 64, 64
	dir := t.TempDir()
	train, val := filepath.Join(dir, "train"), filepath.Join(dir, "val")
	writeNYUSplit(t, train, n, H, W, nil)
	writeNYUSplit(t, val, 6, H, W, nil)
	perExample := int64(H * W * (4*3 + 8 + 4 + 4*3)) // image, label (int64), depth, normal as read
	if set := n * perExample; set <= 100e6 {
		t.Fatalf("the set takes %d bytes as read; want more than --max-memory", set)
	}
	cfg := nyuTune(t, dir, "nyuv2:"+train, "nyuv2:"+val)
	j, err := cfg.Prepare(nil)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if !j.Train.FileBacked() || !j.Val.FileBacked() || j.Train.Len() != n {
		t.Fatalf("train file-backed %v (%d examples), val %v", j.Train.FileBacked(), j.Train.Len(), j.Val.FileBacked())
	}
	if p := j.Memory; p.Data > 1e6 || p.Total() > p.Limit {
		t.Errorf("plan: data %d bytes, total %d of %d; want one decoded file for the data, within the limit", p.Data, p.Total(), p.Limit)
	}
	res, err := j.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res == nil {
		t.Fatal("no result")
	}
	if _, err := os.Stat(cfg.Out); err != nil {
		t.Errorf("no tuned model: %v", err)
	}
	f := j.Train.Folder()
	// Prepare's check reads every example once a batch at a time; so do
	// the report passes (the training set is the report set).
	bound := 2*perExample + int64(H*W*3*4) // an image or normal file decoded
	if p := f.PeakBytes(); p == 0 || p > bound {
		t.Errorf("the training folder held %d bytes at once; want at most a batch and a file, %d", p, bound)
	}
	if f.FilesRead() < 4*n {
		t.Errorf("read %d files; want every example checked before the first step (%d files)", f.FilesRead(), 4*n)
	}
}

// TestTuneFolderErrorsBeforeStep1: defects of a folder source stop tune's
// Prepare, before any step, with an error naming the flag and the file.
func TestTuneFolderErrorsBeforeStep1(t *testing.T) {
	const n, H, W = 6, 64, 64
	for _, tc := range []struct {
		name   string
		label  func(i int, v []float64)
		break_ func(dir string)
		want   []string // "DIR" is the split's folder
	}{
		{"class out of range", func(i int, v []float64) {
			if i == 4 {
				v[9] = 13
			}
		}, nil, []string{"--data", "example 4: DIR/depth/4.npy, DIR/image/4.npy, DIR/label/4.npy, DIR/normal/4.npy", "element 9 is 13"}},
		{"label not whole", func(i int, v []float64) {
			if i == 3 {
				v[2] = 0.25
			}
		}, nil, []string{"--data", "DIR/label/3.npy: value 0.25 at index 2 is not a whole number"}},
		{"missing file", nil, func(dir string) { os.Remove(filepath.Join(dir, "normal", "2.npy")) },
			[]string{"--data", "DIR/normal/2.npy is missing"}},
		{"no such array", nil, func(dir string) {}, []string{"--data", `no array "img" for model input "x"`, "depth, image, label, normal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			train := filepath.Join(dir, "train")
			writeNYUSplit(t, train, n, H, W, tc.label)
			if tc.break_ != nil {
				tc.break_(train)
			}
			cfg := nyuTune(t, dir, "nyuv2:"+train, "")
			if tc.name == "no such array" {
				cfg.Maps = []string{"x=img"}
			}
			_, err := cfg.Prepare(nil)
			if err == nil {
				t.Fatal("Prepare accepted it")
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "DIR", train); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
