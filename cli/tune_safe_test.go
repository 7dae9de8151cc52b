package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
)

// atStep is a Recorder that calls f after step n (and counts the steps
// it saw).
type atStep struct {
	n     int
	f     func()
	steps int
}

func (a *atStep) Init(*finetune.Config) error { return nil }
func (a *atStep) Record(st *finetune.Step) error {
	a.steps++
	if st.Step == a.n && a.f != nil {
		a.f()
	}
	return nil
}
func (a *atStep) Done(*finetune.Result) error { return nil }

// withTuneRecorder sets tuneTestRecorder for the rest of the test.
func withTuneRecorder(t *testing.T, r finetune.Recorder) {
	tuneTestRecorder = r
	t.Cleanup(func() { tuneTestRecorder = nil })
}

// fileSums returns the content of every file of paths, to check nothing
// changed.
func fileSums(t *testing.T, paths ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = b
	}
	return out
}

func TestTuneDestinations(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	out := filepath.Join(dir, "out.onnx")
	existing := filepath.Join(dir, "existing.jsonl")
	cfg := filepath.Join(dir, "run.yaml")
	link := filepath.Join(dir, "link.onnx")
	sub := filepath.Join(dir, "sub")
	for _, err := range []error{
		os.WriteFile(existing, []byte("keep me\n"), 0o644),
		os.WriteFile(cfg, []byte("steps: 1\n"), 0o644),
		os.Symlink(model, link),
		os.Mkdir(sub, 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	inputs := []string{model, data, existing, cfg}
	before := fileSums(t, inputs...)
	base := append([]string{"tune", model, "--data", data, "--criterion", "left+right", "--steps", "1", "--batch", "4"}, lenetTasks...)
	tests := []struct {
		name   string
		args   []string
		needle string
	}{
		{"--log is the input model", []string{"--out", out, "--log", model}, "--log " + model + ": that is the input model"},
		{"--log is the input model, with --force", []string{"--out", out, "--log", model, "--force"}, "that is the input model"},
		{"--log through a link to the model", []string{"--out", out, "--log", link, "--force"}, "that is the input model"},
		{"--log through another spelling of the model", []string{"--out", out, "--log", filepath.Join(dir, "sub", "..", "lenet2.onnx"), "--force"}, "that is the input model"},
		{"--csv is the data", []string{"--out", out, "--csv", data, "--force"}, "--csv " + data + ": that is the input --data file"},
		{"--plot is --out", []string{"--out", out, "--plot", out}, "--plot " + out + ": --out names the same file"},
		{"--log is --csv", []string{"--out", out, "--log", filepath.Join(dir, "t.txt"), "--csv", filepath.Join(dir, "t.txt")}, "names the same file"},
		{"--checkpoint is --log", []string{"--out", out, "--log", filepath.Join(dir, "c"), "--checkpoint", filepath.Join(dir, "c")}, "names the same file"},
		{"--log is the --config file", []string{"--out", out, "--log", cfg, "--config", cfg, "--force"}, "that is the input --config file"},
		{"--log exists", []string{"--out", out, "--log", existing}, "--log " + existing + ": file exists (use --force to replace it)"},
		{"--out in a missing folder", []string{"--out", filepath.Join(dir, "none", "o.onnx")}, "folder " + filepath.Join(dir, "none") + " does not exist"},
		{"--log in a missing folder", []string{"--out", out, "--log", filepath.Join(dir, "none", "log.jsonl")}, "does not exist"},
		{"--out under a regular file", []string{"--out", filepath.Join(data, "o.onnx")}, data + " is not a folder"},
		{"--out a folder", []string{"--out", sub, "--force"}, "is a folder, not a file"},
		{"--out a folder with a slash", []string{"--out", sub + "/"}, "names a folder"},
		{"--out /dev/null", []string{"--out", os.DevNull, "--force"}, "is a character device, not a file"},
		{"--plot /dev/null", []string{"--out", out, "--plot", os.DevNull, "--force"}, "--plot /dev/null: is a character device"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &atStep{}
			withTuneRecorder(t, rec)
			printed, err := runCLI(t, append(slices.Clone(base), tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.needle) {
				t.Fatalf("err = %v, want one containing %q\n%s", err, tc.needle, printed)
			}
			if rec.steps != 0 {
				t.Errorf("%d steps trained before the error; destinations are checked before the first step", rec.steps)
			}
			for p, b := range before {
				if got, _ := os.ReadFile(p); !bytes.Equal(got, b) {
					t.Errorf("%s changed", p)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written", out)
			}
		})
	}
}

// TestTuneReadOnlyFolder: a folder that takes no new files is refused
// before the first step. Root ignores permissions, so under root the case
// means nothing and is skipped; TestTuneDestinations' "--out under a
// regular file" covers a folder that cannot take files for every user.
func TestTuneReadOnlyFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only folders; see the under-a-regular-file case of TestTuneDestinations")
	}
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"tune", model, "--data", data, "--criterion", "left+right", "--steps", "1", "--batch", "4", "--out", filepath.Join(ro, "o.onnx")}, lenetTasks...)
	if _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), "cannot create files in folder") {
		t.Fatalf("err = %v, want a refused folder", err)
	}
}

func TestTuneKeepsTheModel(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	base := append([]string{"tune", model, "--data", data, "--criterion", "left+right", "--steps", "3", "--batch", "4"}, lenetTasks...)
	mkdir := func(d string) string {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name string
		// args and the folder removed after step 1, given a fresh
		// folder for the case.
		setup func(d string) (args []string, gone string)
		// where the model must be afterwards, and what the error says
		model, needle string
		ckpt          bool // the checkpoint is kept
	}{
		{"--out's folder removed during the run", func(d string) ([]string, string) {
			out := filepath.Join(mkdir(d+"-out"), "o.onnx")
			return []string{"--out", out, "--checkpoint", filepath.Join(mkdir(d), "run.ckpt"), "--checkpoint-every", "1"}, filepath.Dir(out)
		}, "o.kept.onnx", "the tuned model is kept in", true},
		{"--log's folder removed during the run", func(d string) ([]string, string) {
			return []string{"--out", filepath.Join(mkdir(d), "o.onnx"), "--log", filepath.Join(mkdir(d+"-log"), "log.jsonl")}, d + "-log"
		}, "o.onnx", "the tuned model was written to", false},
		{"--csv's folder removed during the run", func(d string) ([]string, string) {
			return []string{"--out", filepath.Join(mkdir(d), "o.onnx"), "--csv", filepath.Join(mkdir(d+"-csv"), "t.csv")}, d + "-csv"
		}, "o.onnx", "the tuned model was written to", false},
		{"--plot's folder removed during the run", func(d string) ([]string, string) {
			return []string{"--out", filepath.Join(mkdir(d), "o.onnx"), "--plot", filepath.Join(mkdir(d+"-plot"), "p.png")}, d + "-plot"
		}, "o.onnx", "the tuned model was written to", false},
		{"checkpoint's folder removed during the run", func(d string) ([]string, string) {
			return []string{"--out", filepath.Join(mkdir(d), "o.onnx"), "--checkpoint", filepath.Join(mkdir(d+"-ckpt"), "c.ckpt"), "--checkpoint-every", "1"}, d + "-ckpt"
		}, "o.onnx", "", false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(dir, "case"+string(rune('a'+i)))
			args, gone := tc.setup(d)
			withTuneRecorder(t, &atStep{n: 1, f: func() { os.RemoveAll(gone) }})
			printed, err := runCLI(t, append(slices.Clone(base), args...)...)
			if tc.needle == "" && err != nil {
				t.Fatalf("err = %v\n%s", err, printed)
			}
			if tc.needle != "" && (err == nil || !strings.Contains(err.Error(), tc.needle)) {
				t.Fatalf("err = %v, want one containing %q\n%s", err, tc.needle, printed)
			}
			kept := filepath.Join(d, tc.model)
			if _, err := importer.Load(kept); err != nil {
				t.Errorf("the tuned model is not at %s: %v\n%s", kept, err, printed)
			}
			if err != nil && !strings.Contains(err.Error(), kept) && tc.model != "o.onnx" {
				t.Errorf("the error does not say where the model is (%s): %v", kept, err)
			}
			if tc.ckpt {
				if _, err := os.Stat(filepath.Join(d, "run.ckpt")); err != nil {
					t.Errorf("checkpoint not kept: %v", err)
				}
			}
		})
	}
}

// interrupted runs tune with args and cancels it after step n; it returns
// what it printed.
func interrupted(t *testing.T, n int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	withTuneRecorder(t, &cancelAfter{n: n, cancel: cancel})
	defer func() { tuneTestRecorder = nil }()
	var buf bytes.Buffer
	app := NewApp()
	app.Writer, app.ErrWriter = &buf, &buf
	err := app.RunContext(ctx, append([]string{"paretonav"}, args...))
	var ie *finetune.InterruptedError
	if !errors.As(err, &ie) || ie.Step != n {
		t.Fatalf("err = %v, want an interruption after step %d\n%s", err, n, buf.String())
	}
	return buf.String()
}

// tuneLogSteps returns the step numbers of a JSON-lines log's step lines and
// how many configuration lines it has.
func tuneLogSteps(t *testing.T, path string) (steps []int, configs int, F map[int]float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	F = map[int]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			Kind string   `json:"kind"`
			Step *int     `json:"step"`
			F    *float64 `json:"F"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		switch {
		case line.Kind == "config":
			configs++
		case line.Step != nil:
			steps = append(steps, *line.Step)
			F[*line.Step] = *line.F
		}
	}
	return steps, configs, F
}

// weights returns a model file's initializers.
func weights(t *testing.T, path string) map[string][]float32 {
	t.Helper()
	m, err := importer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := m.Initializers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for name, w := range ws {
		if w.F32 != nil {
			out[name] = w.F32
		}
	}
	return out
}

func TestTuneResumeAlone(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	flags := func(name string) []string {
		return append([]string{"tune", model, "--data", data, "--criterion", "wd:2,2", "--steps", "6", "--batch", "4",
			"--optimizer", "adam", "--lr", "0.001", "--out", filepath.Join(dir, name+".onnx"), "--log", filepath.Join(dir, name+".jsonl"),
			"--csv", filepath.Join(dir, name+".csv"), "--checkpoint-every", "2"}, lenetTasks...)
	}
	if printed, err := runCLI(t, flags("whole")...); err != nil {
		t.Fatalf("uninterrupted: %v\n%s", err, printed)
	}
	if _, err := os.Stat(filepath.Join(dir, "whole.onnx.ckpt")); err == nil {
		t.Error("the checkpoint of a finished run was left behind")
	}

	ckpt := filepath.Join(dir, "run.onnx.ckpt")
	printed := interrupted(t, 3, flags("run")...)
	if want := "continue with `paretonav tune --resume " + ckpt + "`"; !strings.Contains(printed, want) {
		t.Errorf("the interruption does not say %q:\n%s", want, printed)
	}
	// A killed process may have logged steps beyond its checkpoint, and
	// torn its last line: the resumed log drops them.
	lf, err := os.OpenFile(filepath.Join(dir, "run.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	lf.WriteString(`{"step":4,"F":1}` + "\n" + `{"step":5,"F":1}` + "\n" + `{"step":6,"F"`)
	lf.Close()

	// A fresh run with the same destinations refuses to replace the
	// interrupted run's checkpoint.
	rec := &atStep{}
	withTuneRecorder(t, rec)
	_, err = runCLI(t, append(flags("run"), "--force")[:len(flags("run"))]...)
	want := ckpt + " holds an interrupted run at step 3; continue with `paretonav tune --resume " + ckpt + "`, or pass --force to start over"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("fresh run over a checkpoint: err = %v, want %q", err, want)
	}
	if rec.steps != 0 {
		t.Errorf("the refused fresh run trained %d steps", rec.steps)
	}

	printed, err = runCLI(t, "tune", "--resume", ckpt)
	if err != nil {
		t.Fatalf("--resume alone: %v\n%s", err, printed)
	}
	got, whole := weights(t, filepath.Join(dir, "run.onnx")), weights(t, filepath.Join(dir, "whole.onnx"))
	if len(got) == 0 || len(got) != len(whole) {
		t.Fatalf("%d initializers, the uninterrupted run has %d", len(got), len(whole))
	}
	for name, w := range whole {
		if !slices.Equal(got[name], w) {
			t.Errorf("initializer %s differs from the uninterrupted run's", name)
		}
	}
	steps, configs, F := tuneLogSteps(t, filepath.Join(dir, "run.jsonl"))
	if !slices.Equal(steps, []int{1, 2, 3, 4, 5, 6}) || configs != 2 {
		t.Errorf("resumed log: steps %v with %d configuration lines, want 1..6 once each and 2", steps, configs)
	}
	_, _, wholeF := tuneLogSteps(t, filepath.Join(dir, "whole.jsonl"))
	for s, f := range wholeF {
		if F[s] != f {
			t.Errorf("step %d: F %v in the resumed log, %v uninterrupted", s, F[s], f)
		}
	}
	csvRun, _ := os.ReadFile(filepath.Join(dir, "run.csv"))
	csvWhole, _ := os.ReadFile(filepath.Join(dir, "whole.csv"))
	if n, m := bytes.Count(csvRun, []byte("\n")), bytes.Count(csvWhole, []byte("\n")); n != m || bytes.Count(csvRun, []byte("step,")) != 1 {
		t.Errorf("resumed trace: %d lines, the uninterrupted %d\n%s", n, m, csvRun)
	}
	if _, err := os.Stat(ckpt); err == nil {
		t.Error("the checkpoint was left behind after the resumed run finished")
	}
	if !strings.Contains(printed, "checkpoint "+ckpt+" removed") || !strings.Contains(printed, "log "+filepath.Join(dir, "run.jsonl")) {
		t.Errorf("the summary does not say what was written and removed:\n%s", printed)
	}
}

func TestTuneResumeRefuses(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	other := filepath.Join(dir, "other.npz")
	if b, err := os.ReadFile(data); err != nil || os.WriteFile(other, b, 0o644) != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "o.onnx.ckpt")
	args := append([]string{"tune", model, "--data", data, "--criterion", "wd:2,2", "--steps", "6", "--batch", "4",
		"--lr", "0.0001", "--out", filepath.Join(dir, "o.onnx")}, lenetTasks...)
	interrupted(t, 2, args...)
	ckptBytes, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		needle string
	}{
		{"lr", []string{"--lr", "0.01"}, "--lr 0.01 differs from the checkpoint's 0.0001; a resumed run keeps its configuration"},
		{"criterion", []string{"--criterion", "left+right"}, "--criterion left+right differs from the checkpoint's wd:2,2"},
		{"optimizer", []string{"--optimizer", "sgd"}, "--optimizer sgd differs from the checkpoint's adam"},
		{"method", []string{"--method", "mgd"}, "--method mgd differs from the checkpoint's png"},
		{"steps", []string{"--steps", "10"}, "--steps 10 differs from the checkpoint's 6"},
		{"data", []string{"--data", other}, "--data " + other + " differs from the checkpoint's " + data},
		{"model", []string{other}, "MODEL " + other + " differs from the checkpoint's " + model},
		{"several at once", []string{"--lr", "0.01", "--seed", "9"}, "--seed 9 differs from the checkpoint's 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &atStep{}
			withTuneRecorder(t, rec)
			printed, err := runCLI(t, append([]string{"tune", "--resume", ckpt}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.needle) {
				t.Fatalf("err = %v, want one containing %q\n%s", err, tc.needle, printed)
			}
			if rec.steps != 0 {
				t.Errorf("%d steps trained", rec.steps)
			}
		})
	}

	t.Run("flags given again that agree", func(t *testing.T) {
		withTuneRecorder(t, &atStep{})
		// Only checked, not run: a damaged data file stops it first.
		printed, err := runCLI(t, "tune", "--resume", ckpt, "--lr", "0.0001", "--criterion", "wd:2,2", "--max-memory", "1GB", "--out", filepath.Join(dir, "o.onnx"), "--steps", "1000")
		if err == nil || !strings.Contains(err.Error(), "--steps 1000") || strings.Contains(err.Error(), "--lr") || strings.Contains(err.Error(), "--out") || strings.Contains(err.Error(), "--max-memory") {
			t.Fatalf("err = %v, want only --steps refused\n%s", err, printed)
		}
	})

	t.Run("data changed", func(t *testing.T) {
		b, _ := os.ReadFile(data)
		defer os.WriteFile(data, b, 0o644)
		changed := slices.Clone(b)
		changed[len(changed)/2] ^= 1
		os.WriteFile(data, changed, 0o644)
		_, err := runCLI(t, "tune", "--resume", ckpt)
		if err == nil || !strings.Contains(err.Error(), "--data "+data+": its content changed since the interrupted run read it") {
			t.Fatalf("err = %v, want the changed data refused", err)
		}
	})

	for _, at := range []int{9, 30, len(ckptBytes) / 2, len(ckptBytes) - 40, len(ckptBytes) - 1} {
		flipped := slices.Clone(ckptBytes)
		flipped[at] ^= 0x10
		if err := os.WriteFile(ckpt, flipped, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := runCLI(t, "tune", "--resume", ckpt)
		if err == nil || !(strings.Contains(err.Error(), "checksum mismatch") || strings.Contains(err.Error(), "format version")) {
			t.Errorf("byte %d of %d flipped: err = %v, want the checkpoint refused", at, len(ckptBytes), err)
		}
	}
	os.WriteFile(ckpt, ckptBytes, 0o600)

	// With --force a fresh run starts over, and --keep-checkpoint keeps
	// its checkpoint.
	printed, err := runCLI(t, append(args, "--force", "--keep-checkpoint", "--steps", "2", "--checkpoint-every", "1")...)
	if err != nil {
		t.Fatalf("--force: %v\n%s", err, printed)
	}
	if info, err := finetune.ReadCheckpointInfo(ckpt); err != nil || info.Step != 2 {
		t.Errorf("--keep-checkpoint: %+v, %v; want the new run's checkpoint at step 2", info, err)
	}
	if !strings.Contains(printed, "checkpoint "+ckpt+" kept") {
		t.Errorf("the summary does not say the checkpoint was kept:\n%s", printed)
	}
}

func TestEvalGradOutDestinations(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	before := fileSums(t, model, data)
	base := append([]string{"eval", model, "--data", data, "--batch", "4"}, lenetTasks...)
	for _, tc := range []struct {
		name, gradOut, needle string
	}{
		{"the input model", model, "--grad-out " + model + ": that is the input model"},
		{"the data", data, "that is the input --data file"},
		{"a missing folder", filepath.Join(dir, "none", "g.npz"), "does not exist"},
		{"/dev/null", os.DevNull, "is a character device, not a file"},
		{"a folder", dir, "is a folder, not a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCLI(t, append(slices.Clone(base), "--grad-out", tc.gradOut, "--force")...)
			if err == nil || !strings.Contains(err.Error(), tc.needle) {
				t.Fatalf("err = %v, want one containing %q", err, tc.needle)
			}
		})
	}
	for p, b := range before {
		if got, _ := os.ReadFile(p); !bytes.Equal(got, b) {
			t.Errorf("%s changed", p)
		}
	}
}

func TestDemoDestinations(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "log.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := runCLI(t, "demo", "--out-dir", dir, "--force")
	if want := "--out-dir " + filepath.Join(dir, "log.jsonl") + ": is a folder, not a file"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}
