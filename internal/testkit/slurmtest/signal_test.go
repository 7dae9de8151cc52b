package slurmtest

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paretonav/paretonav/batch"
)

// TestBatchSIGTERMThenResume sends SIGTERM to a real `paretonav batch run`
// (the program built as for the Slurm test; no cluster needed) once its
// first job has logged a step: the running job checkpoints, no job is
// left half-written or marked running, the exit status is non-zero, and
// a rerun resumes the job and finishes the batch.
func TestBatchSIGTERMThenResume(t *testing.T) {
	work := t.TempDir()
	bin := buildParetonav(t, work)
	for _, args := range [][]string{
		{"models", "lenet2", "--out", "lenet2.onnx"},
		{"data", "multimnist", "--limit", "256", "--out", "train.npz"},
	} {
		if out, err := run(t, os.Environ(), work, bin, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	jobs := `defaults:
  model: lenet2.onnx
  data: train.npz
  task: ["left:nll:logp_left:left", "right:nll:logp_right:right"]
  criterion: "wd:2,2"
  steps: 150
  batch: 16
jobs:
  - {name: a, matrix: {seed: [1, 2, 3]}}
`
	if err := os.WriteFile(filepath.Join(work, "jobs.yaml"), []byte(jobs), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "batch", "run", "jobs.yaml", "--out-dir", "out")
	cmd.Dir = work
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the first job to start and log a step, then SIGTERM.
	lines := bufio.NewScanner(stderr)
	var first string
	for lines.Scan() {
		if id, ok := strings.CutPrefix(lines.Text(), "start "); ok {
			first = id
			break
		}
	}
	if first == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("batch run started no job")
	}
	logPath := filepath.Join(work, "out", first, batch.LogFile)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(logPath)
		if strings.Count(string(b), `"step":`) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%s logged no steps", first)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	err = cmd.Wait()
	if err == nil || !strings.Contains(rest.String(), "interrupted "+first) {
		t.Fatalf("after SIGTERM: exit %v; want non-zero and %s interrupted:\n%s", err, first, rest.String())
	}
	jd := filepath.Join(work, "out", first)
	for _, f := range []string{batch.ResultFile, batch.ErrorFile, batch.RunningFile, batch.ModelFile} {
		if _, err := os.Stat(filepath.Join(jd, f)); err == nil {
			t.Errorf("interrupted job left %s", f)
		}
	}
	if _, err := os.Stat(filepath.Join(jd, batch.CheckpointFn)); err != nil {
		t.Fatalf("interrupted job: no checkpoint: %v", err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(work, "out", "*", ".*tmp*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}

	out, err := run(t, os.Environ(), work, bin, "batch", "run", "jobs.yaml", "--out-dir", "out")
	if err != nil || !strings.Contains(out, "3 jobs: 3 done now, 0 done before") {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	var res batch.Result
	b, err := os.ReadFile(filepath.Join(jd, batch.ResultFile))
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil || !res.Resumed || res.Steps != 150 {
		t.Errorf("%s after the rerun: %+v (%v), want resumed with 150 steps", first, res, err)
	}
}
