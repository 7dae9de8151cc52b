package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paretonav/paretonav/finetune"
)

// forge rewrites the run configuration a checkpoint holds through edit
// and writes it back with a valid checksum, as anyone can.
func forge(t *testing.T, ckpt string, edit func(cfg map[string]any)) {
	t.Helper()
	c, err := finetune.ReadCheckpoint(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(c.Job, &rec); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(rec["config"], &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	b, _ := json.Marshal(cfg)
	rec["config"] = b
	if c.Job, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if err := finetune.WriteCheckpoint(ckpt, c); err != nil {
		t.Fatal(err)
	}
}

// resultLines counts the result records of a JSON-lines log.
func resultLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"kind":"result"`) {
			n++
		}
	}
	return n
}

// TestTuneResumeTrustsNoCheckpoint: a checkpoint is no authority on where
// a run writes. A forged one naming a log elsewhere with Force is refused
// (the victim file keeps its bytes); a checkpoint moved to another folder
// resumes into that folder; --force is never carried over; a checkpoint of
// a run that already wrote its model is refused, naming the model.
func TestTuneResumeTrustsNoCheckpoint(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	runDir := filepath.Join(dir, "run")
	if err := os.Mkdir(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"tune", model, "--data", data, "--criterion", "wd:2,2", "--steps", "4", "--batch", "4",
		"--out", filepath.Join(runDir, "o.onnx"), "--log", filepath.Join(runDir, "log.jsonl"), "--checkpoint-every", "1"}, lenetTasks...)
	interrupted(t, 2, args...)
	ckpt := filepath.Join(runDir, "o.onnx.ckpt")
	pristine, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("forged log elsewhere with Force", func(t *testing.T) {
		victim := filepath.Join(dir, "victim.txt")
		os.WriteFile(victim, []byte("mine\n"), 0o644)
		forge(t, ckpt, func(cfg map[string]any) { cfg["Log"], cfg["Force"] = victim, true })
		defer os.WriteFile(ckpt, pristine, 0o600)
		rec := &atStep{}
		withTuneRecorder(t, rec)
		_, err := runCLI(t, "tune", "--resume", ckpt)
		if err == nil || !strings.Contains(err.Error(), "outside the checkpoint's folder") || !strings.Contains(err.Error(), "give --log") {
			t.Fatalf("err = %v, want the log outside the checkpoint's folder refused", err)
		}
		if b, _ := os.ReadFile(victim); string(b) != "mine\n" || rec.steps != 0 {
			t.Errorf("victim now %q after %d steps", b, rec.steps)
		}
	})

	t.Run("forged Force is not carried over", func(t *testing.T) {
		existing := filepath.Join(runDir, "o.onnx")
		os.WriteFile(existing, []byte("someone's file"), 0o644)
		defer os.Remove(existing)
		forge(t, ckpt, func(cfg map[string]any) { cfg["Force"] = true })
		defer os.WriteFile(ckpt, pristine, 0o600)
		_, err := runCLI(t, "tune", "--resume", ckpt)
		if err == nil || !strings.Contains(err.Error(), "file exists (use --force to replace it)") {
			t.Fatalf("err = %v, want the existing --out refused without --force", err)
		}
	})

	t.Run("moved to another folder", func(t *testing.T) {
		moved := filepath.Join(dir, "moved")
		os.Mkdir(moved, 0o755)
		for _, f := range []string{"o.onnx.ckpt", "log.jsonl"} {
			b, _ := os.ReadFile(filepath.Join(runDir, f))
			os.WriteFile(filepath.Join(moved, f), b, 0o600)
		}
		printed, err := runCLI(t, "tune", "--resume", filepath.Join(moved, "o.onnx.ckpt"))
		if err != nil {
			t.Fatalf("%v\n%s", err, printed)
		}
		if _, err := os.Stat(filepath.Join(moved, "o.onnx")); err != nil {
			t.Errorf("the model is not in the checkpoint's new folder: %v", err)
		}
		if _, err := os.Stat(filepath.Join(runDir, "o.onnx")); err == nil {
			t.Errorf("the model was written into the checkpoint's old folder")
		}
	})

	t.Run("a finished run's stale copy", func(t *testing.T) {
		stale := filepath.Join(runDir, "stale.ckpt")
		os.WriteFile(stale, pristine, 0o600)
		if printed, err := runCLI(t, "tune", "--resume", ckpt); err != nil {
			t.Fatalf("%v\n%s", err, printed)
		}
		log := filepath.Join(runDir, "log.jsonl")
		before, _ := os.ReadFile(log)
		_, err := runCLI(t, "tune", "--resume", stale)
		want := "this run already finished: it wrote " + filepath.Join(runDir, "o.onnx") + " after 4 steps"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want %q", err, want)
		}
		if after, _ := os.ReadFile(log); string(after) != string(before) {
			t.Errorf("the finished run's log changed")
		}
		if n := resultLines(t, log); n != 2 {
			t.Errorf("%d result records, want 2 (the interruption and the end)", n)
		}
	})
}

// TestTuneResumeAtTheLastStep: a run killed after its last checkpoint and
// its log's result but before its model was written resumes into the
// model alone, and its log keeps one result record for the end.
func TestTuneResumeAtTheLastStep(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	out := filepath.Join(dir, "o.onnx")
	log := filepath.Join(dir, "log.jsonl")
	args := append([]string{"tune", model, "--data", data, "--criterion", "wd:2,2", "--steps", "2", "--batch", "4",
		"--out", out, "--log", log, "--checkpoint-every", "1", "--keep-checkpoint"}, lenetTasks...)
	if printed, err := runCLI(t, args...); err != nil {
		t.Fatalf("%v\n%s", err, printed)
	}
	// As if killed while the model was written: no model, the log holds
	// the result of the end.
	os.Remove(out)
	if printed, err := runCLI(t, "tune", "--resume", out+".ckpt"); err != nil {
		t.Fatalf("%v\n%s", err, printed)
	}
	if n := resultLines(t, log); n != 1 {
		b, _ := os.ReadFile(log)
		t.Errorf("%d result records, want 1\n%s", n, b)
	}
}

// TestTuneOneProcessPerRun: while a real process holds a run's lock, a
// tune of that run is refused before its first step; the stale temporary
// files a killed run left beside its checkpoint are removed by the next
// run of it.
func TestTuneOneProcessPerRun(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("flock (util-linux) is missing")
		}
		t.Skip("no flock (util-linux)")
	}
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	out := filepath.Join(dir, "o.onnx")
	args := append([]string{"tune", model, "--data", data, "--criterion", "wd:2,2", "--steps", "2", "--batch", "4", "--out", out}, lenetTasks...)
	lock := filepath.Join(dir, ".o.onnx.ckpt.lock")
	holder := exec.Command(flock, "--exclusive", "--close", lock, "sleep", "60") // --close: sleep does not inherit the lock
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	for i := 0; i < 200; i++ { // until flock holds it
		if _, err := os.Stat(lock); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	rec := &atStep{}
	withTuneRecorder(t, rec)
	_, err = runCLI(t, slices.Clone(args)...)
	if err == nil || !strings.Contains(err.Error(), "is running this job") {
		t.Fatalf("err = %v, want the run refused while another process holds it", err)
	}
	if rec.steps != 0 {
		t.Errorf("%d steps trained", rec.steps)
	}
	holder.Process.Kill()
	holder.Wait()

	stale := filepath.Join(dir, ".o.onnx.ckpt.tmp123456")
	other := filepath.Join(dir, ".other.tmp1")
	os.WriteFile(stale, []byte("half a checkpoint"), 0o600)
	os.WriteFile(other, []byte("not ours"), 0o600)
	if printed, err := runCLI(t, args...); err != nil {
		t.Fatalf("%v\n%s", err, printed)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("the stale temporary checkpoint was left")
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another file's temporary was removed")
	}
	if _, err := os.Stat(lock); err == nil {
		t.Errorf("the lock file was left behind")
	}
}

// TestTuneSummaryListsOnlyFiles: a log whose folder is removed during the
// run is not listed as written; the summary says it is gone.
func TestTuneSummaryListsOnlyFiles(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	logDir := filepath.Join(dir, "logs")
	os.Mkdir(logDir, 0o755)
	log := filepath.Join(logDir, "log.jsonl")
	withTuneRecorder(t, &atStep{n: 1, f: func() { os.RemoveAll(logDir) }})
	printed, _ := runCLI(t, append([]string{"tune", model, "--data", data, "--criterion", "wd:2,2", "--steps", "2", "--batch", "4",
		"--out", filepath.Join(dir, "o.onnx"), "--log", log}, lenetTasks...)...)
	if strings.Contains(printed, "  log "+log) {
		t.Errorf("the summary lists the removed log:\n%s", printed)
	}
	if !strings.Contains(printed, "the log "+log+" is no longer there") {
		t.Errorf("the summary does not say the log is gone:\n%s", printed)
	}
}
