package job

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
)

// nyuSplitAsNPZ reads the NYUv2 split under dir (MTAN's layout, one .npy
// per example, channels last) with numpy's conventions done by hand and
// writes it as one NPZ of the arrays tune reads: image N×3×H×W, label
// int64 N×H×W, depth N×1×H×W, normal N×3×H×W.
func nyuSplitAsNPZ(t *testing.T, dir, out string, n, H, W int) {
	t.Helper()
	chw := func(name string, C int) *importer.Tensor {
		v := make([]float32, 0, n*C*H*W)
		for i := range n {
			x, err := npz.DecodeNPY(filepath.Join(dir, name, strconv.Itoa(i)+".npy"))
			if err != nil {
				t.Fatal(err)
			}
			for c := range C {
				for p := range H * W {
					v = append(v, x.F32[p*C+c])
				}
			}
		}
		return importer.NewFloat32(name, []int{n, C, H, W}, v)
	}
	lab := make([]int64, 0, n*H*W)
	for i := range n {
		x, err := npz.DecodeNPY(filepath.Join(dir, "label", strconv.Itoa(i)+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range x.F64 {
			lab = append(lab, int64(f))
		}
	}
	arrays := map[string]*importer.Tensor{"image": chw("image", 3), "depth": chw("depth", 1), "normal": chw("normal", 3),
		"label": importer.NewInt64("label", []int{n, H, W}, lab)}
	if err := npz.Write(out, arrays); err != nil {
		t.Fatal(err)
	}
}

// stepLosses returns the "losses" of every step record of a tune log.
func stepLosses(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("%s: %v", log, err)
		}
		if l, ok := rec["losses"]; ok {
			out = append(out, string(l))
		}
	}
	return out
}

// TestTuneFolderMatchesNPZ: tune reading an NYUv2 split in MTAN's layout
// (--data nyuv2:DIR, a batch at a time) and tune reading the same examples
// converted to one NPZ make the same run: the same losses at every step
// and the same tuned weights, bit for bit, validation split included.
func TestTuneFolderMatchesNPZ(t *testing.T) {
	const n, H, W = 6, 64, 64
	dir := t.TempDir()
	train, val := filepath.Join(dir, "train"), filepath.Join(dir, "val")
	writeNYUSplit(t, train, n, H, W, nil)
	writeNYUSplit(t, val, 3, H, W, nil)
	trainNPZ, valNPZ := filepath.Join(dir, "train.npz"), filepath.Join(dir, "val.npz")
	nyuSplitAsNPZ(t, train, trainNPZ, n, H, W)
	nyuSplitAsNPZ(t, val, valNPZ, 3, H, W)

	run := func(data, valData string) (model []byte, losses []string) {
		cfg := nyuTune(t, dir, data, valData)
		cfg.Steps = 4
		cfg.Log = filepath.Join(t.TempDir(), "tune.jsonl")
		j, err := cfg.Prepare(nil)
		if err != nil {
			t.Fatalf("%s: Prepare: %v", data, err)
		}
		if _, err := j.Run(context.Background()); err != nil {
			t.Fatalf("%s: Run: %v", data, err)
		}
		b, err := os.ReadFile(cfg.Out)
		if err != nil {
			t.Fatal(err)
		}
		return b, stepLosses(t, cfg.Log)
	}
	folderModel, folderLosses := run("nyuv2:"+train, "nyuv2:"+val)
	npzModel, npzLosses := run(trainNPZ, valNPZ)
	if len(folderLosses) < 4 {
		t.Fatalf("the folder run logged %d steps' losses; want 4", len(folderLosses))
	}
	if strings.Join(folderLosses, "\n") != strings.Join(npzLosses, "\n") {
		t.Errorf("losses per step differ:\nfolder %v\nNPZ    %v", folderLosses, npzLosses)
	}
	// The models differ only in the run's identity in their metadata
	// (it fingerprints the data's paths): compare the weights.
	if len(folderModel) != len(npzModel) {
		t.Fatalf("the tuned models differ in size: %d and %d bytes", len(folderModel), len(npzModel))
	}
	fw, nw := weights(t, folderModel), weights(t, npzModel)
	if len(fw) == 0 || len(fw) != len(nw) {
		t.Fatalf("%d and %d initializers", len(fw), len(nw))
	}
	for name, f := range fw {
		w, ok := nw[name]
		if !ok || !slices.Equal(f.F32, w.F32) || !slices.Equal(f.Shape, w.Shape) {
			t.Errorf("initializer %s differs between the folder run and the NPZ run", name)
		}
	}
}

// weights decodes the initializers of an ONNX model held in b.
func weights(t *testing.T, b []byte) map[string]*importer.Tensor {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.onnx")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := importer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Initializers()
	if err != nil {
		t.Fatal(err)
	}
	return w
}
