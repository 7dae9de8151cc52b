package slurmtest

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paretonav/paretonav/batch"
)

// requireCluster skips the test when no Slurm can be started here, except
// under CI=true, where CI has installed it and the test must run.
func requireCluster(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skip(err)
	}
}

// buildParetonav builds the paretonav program into dir.
func buildParetonav(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "paretonav")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/paretonav/paretonav").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// run runs the program with args in dir and returns its output.
func run(t *testing.T, env []string, dir, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestBatchOnSlurmArray submits a 25-job batch (24 tune jobs, criteria ×
// seeds on LeNet2 and MultiMNIST, and one job whose losses turn NaN) as a
// 3-task Slurm array on a real single-node cluster, waits for it, and
// checks that the array task holding the bad job is FAILED while the
// others complete, that every other job is done, that a local rerun skips
// them all, and that collect gives a row per job.
func TestBatchOnSlurmArray(t *testing.T) {
	requireCluster(t)
	work := t.TempDir()
	bin := buildParetonav(t, work)
	c, err := Start(filepath.Join(work, "slurm"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	env := c.Env()
	for _, args := range [][]string{
		{"models", "lenet2", "--out", "lenet2.onnx"},
		{"data", "multimnist", "--limit", "64", "--out", "train.npz"},
	} {
		if out, err := run(t, env, work, bin, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	jobs := `defaults:
  model: lenet2.onnx
  data: train.npz
  task: ["left:nll:logp_left:left", "right:nll:logp_right:right"]
  steps: 4
  batch: 16
jobs:
  - name: sweep
    matrix:
      criterion: ["wd:2.0,2.4", "wd:2.2,2.2", "wd:2.4,2.0", "left+right"]
      seed: [1, 2, 3, 4, 5, 6]
  - {name: bad, criterion: "wd:2,2", lr: 1e9}
`
	if err := os.WriteFile(filepath.Join(work, "jobs.yaml"), []byte(jobs), 0o644); err != nil {
		t.Fatal(err)
	}
	const shards = 3 // the bad job is job 24: shard 24 mod 3 = 0
	out, err := run(t, env, work, bin, "batch", "slurm", "jobs.yaml", "--out-dir", "out", "--shards", fmt.Sprint(shards), "--submit")
	if err != nil {
		t.Fatalf("batch slurm --submit: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`submitted job (\d+)`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "sbatch ") {
		t.Fatalf("batch slurm --submit printed no sbatch line and job ID:\n%s", out)
	}
	id := m[1]
	if _, err := os.Stat(filepath.Join(work, "out", batch.SlurmLogDir)); err != nil {
		t.Fatalf("log folder not created before submission: %v", err)
	}
	if err := c.Wait(id, 8*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, c.Logs())
	}
	states, err := c.ArrayStates(id)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{0: "FAILED", 1: "COMPLETED", 2: "COMPLETED"}
	for k, w := range want {
		if states[k] != w {
			logs, _ := filepath.Glob(filepath.Join(work, "out", batch.SlurmLogDir, "*"))
			var text strings.Builder
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				fmt.Fprintf(&text, "--- %s\n%s\n", l, b)
			}
			t.Fatalf("array task states %v, want %v\n%s", states, want, text.String())
		}
	}

	out, err = run(t, env, work, bin, "batch", "status", "out", "--json")
	if err != nil {
		t.Fatalf("batch status: %v\n%s", err, out)
	}
	var st batch.BatchStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("batch status --json: %v\n%s", err, out)
	}
	if st.Counts[batch.StateDone] != 24 || st.Counts[batch.StateFailed] != 1 || len(st.Jobs) != 25 {
		t.Errorf("status counts %v of %d jobs, want 24 done, 1 failed of 25", st.Counts, len(st.Jobs))
	}
	for _, j := range st.Jobs {
		if (j.Name == "bad") != (j.State == batch.StateFailed) {
			t.Errorf("job %s: %s", j.ID, j.State)
		}
	}

	// A local rerun of the whole file skips everything.
	out, err = run(t, env, work, bin, "batch", "run", "jobs.yaml", "--out-dir", "out")
	if err == nil || !strings.Contains(out, "25 jobs: 0 done now, 24 done before, 1 failed") {
		t.Errorf("rerun: %v, want 24 skipped and 1 failed:\n%s", err, out)
	}

	if out, err := run(t, env, work, bin, "batch", "collect", "out"); err != nil {
		t.Fatalf("batch collect: %v\n%s", err, out)
	}
	f, err := os.Open(filepath.Join(work, "out", "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 26 {
		t.Fatalf("results.csv: %d rows, want a header and 25 jobs", len(rows))
	}
	status := map[string]int{}
	for _, r := range rows[1:] {
		status[r[3]]++
	}
	if status["done"] != 24 || status["failed"] != 1 {
		t.Errorf("results.csv statuses %v, want 24 done and 1 failed", status)
	}
}
