package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/finetune"
)

func TestFrontResumeAlone(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	flags := func(name string) []string {
		return append([]string{"front", model, "--data", data, "--models", "2", "--steps", "4", "--batch", "4",
			"--out-dir", filepath.Join(dir, name), "--log", filepath.Join(dir, name, "log.jsonl"), "--checkpoint-every", "2"}, lenetTasks...)
	}
	if printed, err := runCLI(t, flags("whole")...); err != nil {
		t.Fatalf("uninterrupted: %v\n%s", err, printed)
	}
	if _, err := os.Stat(filepath.Join(dir, "whole", "front.ckpt")); err == nil {
		t.Error("the checkpoint of a finished run was left behind")
	}

	ckpt := filepath.Join(dir, "run", "front.ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	frontTestRecorder = &cancelAfter{n: 3, cancel: cancel}
	var buf bytes.Buffer
	app := NewApp()
	app.Writer, app.ErrWriter = &buf, &buf
	err := app.RunContext(ctx, append([]string{"paretonav"}, flags("run")...))
	frontTestRecorder = nil
	var ie *finetune.InterruptedError
	if !errors.As(err, &ie) || ie.Step != 3 {
		t.Fatalf("err = %v, want an interruption after step 3\n%s", err, buf.String())
	}
	if want := "continue with `paretonav front --resume " + ckpt + "`"; !strings.Contains(buf.String(), want) {
		t.Errorf("the interruption does not say %q:\n%s", want, buf.String())
	}

	// A fresh run refuses to replace the checkpoint; changed flags and
	// destinations that are inputs are refused before the first step.
	for _, tc := range []struct {
		args   []string
		needle string
	}{
		{flags("run"), ckpt + " holds an interrupted run at step 3; continue with `paretonav front --resume " + ckpt + "`, or pass --force to start over"},
		{[]string{"front", "--resume", ckpt, "--lr", "0.5"}, "--lr 0.5 differs from the checkpoint's 0.001"},
		{[]string{"front", "--resume", ckpt, "--models", "3"}, "--models 3 differs from the checkpoint's 2"},
		{[]string{"front", "--resume", ckpt, "--log", filepath.Join(dir, "elsewhere.jsonl")}, "--log " + filepath.Join(dir, "elsewhere.jsonl") + " differs from the checkpoint's " + filepath.Join(dir, "run", "log.jsonl")},
		{append(slices.Clone(flags("other")), "--log", model), "--log " + model + ": that is the input model"},
		{append(slices.Clone(flags("other")), "--csv", data), "that is the input --data file"},
	} {
		rec := &atStep{}
		frontTestRecorder = rec
		_, err := runCLI(t, tc.args...)
		frontTestRecorder = nil
		if err == nil || !strings.Contains(err.Error(), tc.needle) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.needle)
		}
		if rec.steps != 0 {
			t.Errorf("%v: %d steps trained", tc.args, rec.steps)
		}
	}

	printed, err := runCLI(t, "front", "--resume", ckpt)
	if err != nil {
		t.Fatalf("--resume alone: %v\n%s", err, printed)
	}
	for k := range 2 {
		name := "model_" + string(rune('0'+k)) + ".onnx"
		got, whole := weights(t, filepath.Join(dir, "run", name)), weights(t, filepath.Join(dir, "whole", name))
		for n, w := range whole {
			if !slices.Equal(got[n], w) {
				t.Errorf("%s: initializer %s differs from the uninterrupted run's", name, n)
			}
		}
	}
	steps, configs, _ := tuneLogSteps(t, filepath.Join(dir, "run", "log.jsonl"))
	if !slices.Equal(steps, []int{1, 2, 3, 4}) || configs != 2 {
		t.Errorf("resumed log: steps %v with %d configuration lines, want 1..4 once each and 2", steps, configs)
	}
	if _, err := os.Stat(ckpt); err == nil {
		t.Error("the checkpoint was left behind after the resumed run finished")
	}
	if !strings.Contains(printed, "checkpoint "+ckpt+" removed") {
		t.Errorf("the summary does not say the checkpoint was removed:\n%s", printed)
	}
}
