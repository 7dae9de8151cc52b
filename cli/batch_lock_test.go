package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/paretonav/paretonav/batch"
	"github.com/paretonav/paretonav/finetune"
)

// The batch locking tests run paretonav in child processes: the test
// binary itself, which TestMain turns into paretonav when
// helperArgsEnv holds its arguments (one per line). With helperKillEnv
// set to K, the child kills itself with SIGKILL after logging step K of
// a job: a crash no deferred code sees.
const (
	helperArgsEnv = "PARETONAV_TEST_HELPER_ARGS"
	helperKillEnv = "PARETONAV_TEST_HELPER_KILL_AT"
)

func TestMain(m *testing.M) {
	if args := os.Getenv(helperArgsEnv); args != "" {
		if k, err := strconv.Atoi(os.Getenv(helperKillEnv)); err == nil {
			batchTestRecorder = killAt(k)
		}
		app := NewApp()
		if err := app.Run(append([]string{"paretonav"}, strings.Split(args, "\n")...)); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// killAt is a Recorder that kills its process at step k.
type killAt int

func (k killAt) Init(*finetune.Config) error { return nil }
func (k killAt) Record(st *finetune.Step) error {
	if st.Step == int(k) {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return nil
}
func (k killAt) Done(*finetune.Result) error { return nil }

// helperCmd is paretonav args in a child process (see TestMain).
func helperCmd(t *testing.T, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperArgsEnv+"="+strings.Join(args, "\n")), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

// logSteps reads a job's log.jsonl: every line must parse; it returns the
// step numbers in order and the count of configuration lines.
func logSteps(t *testing.T, path string) (steps []int, configs int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var rec struct {
			Kind string `json:"kind"`
			Step *int   `json:"step"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%s line %d %.60q: %v", path, i+1, line, err)
		}
		switch {
		case rec.Step != nil:
			steps = append(steps, *rec.Step)
		case rec.Kind == "config":
			configs++
		}
	}
	return steps, configs
}

// wantSteps fails t unless steps is 1..n, each once.
func wantSteps(t *testing.T, what string, steps []int, n int) {
	t.Helper()
	ok := len(steps) == n
	for i := 0; ok && i < n; i++ {
		ok = steps[i] == i+1
	}
	if !ok {
		t.Errorf("%s: steps %v, want 1..%d once each", what, steps, n)
	}
}

// TestBatchTwoProcessesShareOutDir: two batch run processes started
// together on one --out-dir run every job exactly once between them (a
// job locked by the other is skipped as running elsewhere), and every
// job's log parses with its steps once.
func TestBatchTwoProcessesShareOutDir(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	const steps = 25
	jobsFile := filepath.Join(dir, "jobs.yaml")
	text := fmt.Sprintf("defaults: {model: %s, data: %s, task: [\"left:nll:logp_left:left\", \"right:nll:logp_right:right\"], criterion: \"wd:2,2\", steps: %d, batch: 4, matrix: {seed: [1, 2, 3, 4, 5, 6]}}\n", model, data, steps)
	if err := os.WriteFile(jobsFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var outs []*bytes.Buffer
	var cmds []*exec.Cmd
	for range 2 {
		cmd, buf := helperCmd(t, nil, "batch", "run", jobsFile, "--out-dir", out)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, buf)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
	}
	jobs, err := batch.LoadFile(jobsFile)
	if err != nil {
		t.Fatal(err)
	}
	both := outs[0].String() + outs[1].String()
	for _, j := range jobs {
		if n := strings.Count(both, "start "+j.ID+"\n"); n != 1 {
			t.Errorf("job %s started %d times, want once\n%s", j.ID, n, both)
		}
		s, configs := logSteps(t, filepath.Join(out, j.ID, batch.LogFile))
		wantSteps(t, j.ID, s, steps)
		if configs != 1 {
			t.Errorf("%s: %d configuration lines, want 1", j.ID, configs)
		}
		if st := batch.StateOf(out, j); st.State != batch.StateDone {
			t.Errorf("%s: %+v, want done", j.ID, st)
		}
	}
	t.Logf("process 0 ran %d jobs, process 1 ran %d", strings.Count(outs[0].String(), "start "), strings.Count(outs[1].String(), "start "))
}

// TestBatchKilledRunResumes: a batch run killed (SIGKILL) past its last
// checkpoint leaves no stale lock: the next run takes the job, resumes
// it from the checkpoint, and its log holds every step once (the steps
// the killed run logged after its checkpoint are replaced).
func TestBatchKilledRunResumes(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	const steps = 20
	jobsFile := filepath.Join(dir, "jobs.yaml")
	text := fmt.Sprintf("defaults: {model: %s, data: %s, task: [\"left:nll:logp_left:left\", \"right:nll:logp_right:right\"], criterion: \"wd:2,2\", steps: %d, batch: 4, checkpoint-every: 5}\n", model, data, steps)
	if err := os.WriteFile(jobsFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd, buf := helperCmd(t, []string{helperKillEnv + "=13"}, "batch", "run", jobsFile, "--out-dir", out)
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("first run: %v, want killed\n%s", err, buf)
	}
	jobs, _ := batch.LoadFile(jobsFile)
	jd := filepath.Join(out, jobs[0].ID)
	s, _ := logSteps(t, filepath.Join(jd, batch.LogFile))
	if len(s) < 11 {
		t.Fatalf("killed run logged steps %v, want past the checkpoint at step 10", s)
	}
	if st := batch.StateOf(out, jobs[0]); st.State != batch.StatePending || st.Checkpoint == "" {
		t.Fatalf("after the kill: %+v, want pending with a checkpoint (no stale lock)", st)
	}
	cmd, buf = helperCmd(t, nil, "batch", "run", jobsFile, "--out-dir", out)
	if err := cmd.Run(); err != nil {
		t.Fatalf("rerun: %v\n%s", err, buf)
	}
	s, configs := logSteps(t, filepath.Join(jd, batch.LogFile))
	wantSteps(t, "resumed log", s, steps)
	if configs != 2 {
		t.Errorf("resumed log: %d configuration lines, want 2 (the killed run's and the resumed run's)", configs)
	}
	res, err := batch.ReadResult(out, jobs[0])
	if err != nil || !res.Resumed || res.Steps != steps {
		t.Errorf("result %+v (%v), want resumed with %d steps", res, err, steps)
	}
}

// TestBatchTruncatedResult: a job whose result.json is cut short does
// not count as done: status says so by name, collect reports it in the
// job's row instead of failing, and batch run runs it again.
func TestBatchTruncatedResult(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	jobsFile := filepath.Join(dir, "jobs.yaml")
	text := "defaults: {model: " + model + ", data: " + data + ", task: [\"left:nll:logp_left:left\", \"right:nll:logp_right:right\"], criterion: \"wd:2,2\", steps: 3, batch: 4}\n" +
		"jobs: [{name: a}, {name: b, seed: 2}]\n"
	if err := os.WriteFile(jobsFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if printed, err := runCLI(t, "batch", "run", jobsFile, "--out-dir", out); err != nil {
		t.Fatalf("batch run: %v\n%s", err, printed)
	}
	jobs, _ := batch.LoadFile(jobsFile)
	rp := filepath.Join(out, jobs[0].ID, batch.ResultFile)
	b, err := os.ReadFile(rp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rp, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if st := batchStatusOf(t, out); st["a "+jobs[0].ID] != batch.StatePending || st["b "+jobs[1].ID] != batch.StateDone {
		t.Errorf("status with a truncated result: %v, want a pending, b done", st)
	}
	col, err := batch.Collect(out)
	if err != nil {
		t.Fatalf("collect: %v", err)
	}
	for _, r := range col.Rows {
		bad := r.ID == jobs[0].ID
		if bad != (r.Status == batch.StatePending) || bad != strings.Contains(r.Error, rp) {
			t.Errorf("collect row %s: status %s, error %q", r.ID, r.Status, r.Error)
		}
	}
	printed, err := runCLI(t, "batch", "run", jobsFile, "--out-dir", out, "--json")
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, printed)
	}
	if !strings.Contains(printed, "rerun "+jobs[0].ID+": its result does not count") {
		t.Errorf("rerun does not report the bad result:\n%s", printed)
	}
	if _, err := batch.ReadResult(out, jobs[0]); err != nil {
		t.Errorf("after the rerun: %v", err)
	}
}
