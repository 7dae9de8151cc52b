package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models"
)

// writeNYUFolder writes n examples of 32×32 in MTAN's NYUv2 layout
// (channels last, float64 as MTAN's preprocessing saves them) under dir.
func writeNYUFolder(t *testing.T, dir string, n int) {
	t.Helper()
	const H, W = 32, 32
	for i := range n {
		img, nrm := make([]float64, H*W*3), make([]float64, H*W*3)
		lab, dep := make([]float64, H*W), make([]float64, H*W)
		for k := range img {
			img[k] = float64((i+k)%9) / 8
			nrm[k] = float64((i*2+k)%5)/4 - 0.5
		}
		for k := range lab {
			lab[k] = float64((i+k)%14 - 1)
			dep[k] = 1 + float64((i+k)%4)
		}
		for name, a := range map[string]*importer.Tensor{
			"image":  {Type: importer.Float64, Shape: []int{H, W, 3}, F64: img},
			"label":  {Type: importer.Float64, Shape: []int{H, W}, F64: lab},
			"depth":  {Type: importer.Float64, Shape: []int{H, W, 1}, F64: dep},
			"normal": {Type: importer.Float64, Shape: []int{H, W, 3}, F64: nrm},
		} {
			p := filepath.Join(dir, name, fmt.Sprintf("%d.npy", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := npz.WriteNPY(p, a); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestTuneNYUv2FolderResumed: `tune --data nyuv2:DIR --val nyuv2:DIR`
// on an NYUv2 split in MTAN's layout, interrupted after two steps,
// resumes from its checkpoint to the end; a checkpoint whose folder
// changed since (one example rewritten) is refused, naming the folder.
func TestTuneNYUv2FolderResumed(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "mtan.onnx")
	if err := models.WriteModel(model, models.MTAN(models.MTANConfig{Width: 2, InputHeight: 32, InputWidth: 32, Seed: 1})); err != nil {
		t.Fatal(err)
	}
	train, val := filepath.Join(dir, "nyu", "train"), filepath.Join(dir, "nyu", "val")
	writeNYUFolder(t, train, 8)
	writeNYUFolder(t, val, 3)
	out, ckpt := filepath.Join(dir, "tuned.onnx"), filepath.Join(dir, "run.ckpt")
	args := []string{"paretonav", "tune", model, "--data", "nyuv2:" + train, "--val", "nyuv2:" + val, "--map", "x=image",
		"--task", "seg:nll:seg_logp:label:ignore_index=-1", "--task", "depth:depth_l1:depth:depth", "--task", "normal:normal_cos:normal:normal",
		"--criterion", "seg*normal/(0.001+depth)", "--steps", "5", "--batch", "2", "--out", out, "--checkpoint", ckpt}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tuneTestRecorder = &cancelAfter{n: 2, cancel: cancel}
	defer func() { tuneTestRecorder = nil }()
	var buf bytes.Buffer
	app := NewApp()
	app.Writer, app.ErrWriter = &buf, &buf
	err := app.RunContext(ctx, args)
	var ie *finetune.InterruptedError
	if !errors.As(err, &ie) || ie.Step != 2 {
		t.Fatalf("err = %v, want an InterruptedError at step 2\n%s", err, buf.String())
	}
	tuneTestRecorder = nil
	saved, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}

	printed, err := runCLI(t, append(args[1:], "--resume", ckpt)...)
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, printed)
	}
	if !strings.Contains(printed, "on the validation data (3 examples)") || !strings.Contains(printed, "wrote "+out) {
		t.Errorf("resumed run's summary:\n%s", printed)
	}

	// The same interrupted run, its folder changed since.
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ckpt, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	l := &importer.Tensor{Type: importer.Float64, Shape: []int{32, 32}, F64: make([]float64, 32*32)}
	if err := npz.WriteNPY(filepath.Join(train, "label", "5.npy"), l); err != nil {
		t.Fatal(err)
	}
	printed, err = runCLI(t, append(args[1:], "--resume", ckpt)...)
	if err == nil || !strings.Contains(err.Error(), "--data "+train+": its content changed since the interrupted run read it") {
		t.Errorf("resume over a changed folder: err = %v\n%s", err, printed)
	}
}
