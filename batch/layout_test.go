package batch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestStateOf checks the states a job folder can show: result → done,
// a live process's marker → running (even beside a stale error), a dead
// process's marker → pending, error → failed, a checkpoint → pending
// that resumes.
func TestStateOf(t *testing.T) {
	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	j := Job{ID: "j-0123abcd", Name: "j", Kind: KindTune}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
		ckpt  bool
	}{
		{"empty", nil, StatePending, false},
		{"done", map[string]string{ResultFile: "{}", ErrorFile: "old"}, StateDone, false},
		{"failed", map[string]string{ErrorFile: "job j: boom\nmore"}, StateFailed, false},
		{"running here", map[string]string{RunningFile: fmt.Sprintf("%s %d\n", host, os.Getpid())}, StateRunning, false},
		{"running elsewhere", map[string]string{RunningFile: "other-host-xyz 1\n"}, StateRunning, false},
		{"dead marker", map[string]string{RunningFile: fmt.Sprintf("%s %d\n", host, dead.Process.Pid), CheckpointFn: "x"}, StatePending, true},
		{"garbage marker", map[string]string{RunningFile: "nonsense"}, StatePending, false},
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
			st := StateOf(dir, j)
			if st.State != tc.want || (st.Checkpoint != "") != tc.ckpt {
				t.Errorf("state %+v, want %s (checkpoint %v)", st, tc.want, tc.ckpt)
			}
			if tc.want == StateFailed && st.Error != "job j: boom" {
				t.Errorf("error %q, want its first line", st.Error)
			}
		})
	}
}
