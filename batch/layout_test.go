package batch

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// goodResult is a tune job's result.json holding what collect reads.
const goodResult = `{"id":"j-0123abcd","name":"j","kind":"tune","tasks":["a"],"losses":{"a":0.5},"F":0.5,"g":0.1,"steps":3,"files":{"model":"j-0123abcd/model.onnx"}}`

// TestStateOf checks the states a job folder can show: a valid result →
// done; a held lock → running (even beside a stale error), whatever the
// marker says; a marker or lock file nobody holds → pending; error →
// failed; a checkpoint → pending that resumes; a truncated or foreign
// result.json → not done, with the reason.
func TestStateOf(t *testing.T) {
	j := Job{ID: "j-0123abcd", Name: "j", Kind: KindTune}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		lock    bool // this process holds the job's lock
		want    string
		ckpt    bool
		invalid string // substring of Invalid
	}{
		{"empty", nil, false, StatePending, false, ""},
		{"done", map[string]string{ResultFile: goodResult, ErrorFile: "old"}, false, StateDone, false, ""},
		{"failed", map[string]string{ErrorFile: "job j: boom\nmore"}, false, StateFailed, false, ""},
		{"locked", map[string]string{RunningFile: "somehost 12\n", ErrorFile: "old"}, true, StateRunning, false, ""},
		{"locked without marker", nil, true, StateRunning, false, ""},
		{"marker without lock", map[string]string{RunningFile: "somehost 12\n", CheckpointFn: "x"}, false, StatePending, true, ""},
		{"lock file nobody holds", map[string]string{LockFile: ""}, false, StatePending, false, ""},
		{"truncated result", map[string]string{ResultFile: goodResult[:40], CheckpointFn: "x"}, false, StatePending, true, "unexpected end of JSON"},
		{"empty result", map[string]string{ResultFile: "{}"}, false, StatePending, false, `no id "j-0123abcd"`},
		{"result without losses", map[string]string{ResultFile: strings.Replace(goodResult, `"losses":{"a":0.5},`, "", 1)}, false, StatePending, false, `no a loss for task "a"`},
		{"truncated result, locked", map[string]string{ResultFile: goodResult[:40]}, true, StateRunning, false, "unexpected end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			jd := filepath.Join(dir, j.ID)
			os.MkdirAll(jd, 0o755)
			for f, text := range tc.files {
				if err := os.WriteFile(filepath.Join(jd, f), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.lock {
				lk, err := tryLock(filepath.Join(jd, LockFile))
				if err != nil || lk == nil {
					t.Fatalf("tryLock: %v, %v", lk, err)
				}
				defer lk.Close()
			}
			st := StateOf(dir, j)
			if st.State != tc.want || (st.Checkpoint != "") != tc.ckpt {
				t.Errorf("state %+v, want %s (checkpoint %v)", st, tc.want, tc.ckpt)
			}
			if tc.want == StateFailed && st.Error != "job j: boom" {
				t.Errorf("error %q, want its first line", st.Error)
			}
			if !strings.Contains(st.Invalid, tc.invalid) || (tc.invalid == "") != (st.Invalid == "") {
				t.Errorf("invalid %q, want %q", st.Invalid, tc.invalid)
			}
		})
	}
}

// TestTryLock: a second lock on a held job is refused (the job runs
// elsewhere), a probe (lockHeld) does not make a run skip the job, and
// closing the file frees it.
func TestTryLock(t *testing.T) {
	p := filepath.Join(t.TempDir(), LockFile)
	a, err := tryLock(p)
	if err != nil || a == nil {
		t.Fatalf("first lock: %v, %v", a, err)
	}
	if !lockHeld(p) {
		t.Errorf("lockHeld = false while held")
	}
	if b, err := tryLock(p); err != nil || b != nil {
		t.Errorf("second lock: %v, %v; want refused", b, err)
	}
	a.Close()
	if lockHeld(p) {
		t.Errorf("lockHeld = true after release")
	}
	// A probe holding its shared lock for a while: the run waits it out.
	probe, _ := os.Open(p)
	flock(int(probe.Fd()), syscall.LOCK_SH)
	go func() { probeHold(); probe.Close() }()
	c, err := tryLock(p)
	if err != nil || c == nil {
		t.Fatalf("lock beside a probe: %v, %v; want taken", c, err)
	}
	c.Close()
}

// probeHold is how long TestTryLock's probe holds its shared lock: more
// than one retry's pause, well under all of them.
func probeHold() { time.Sleep(10 * lockPause) }
