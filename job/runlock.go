package job

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// runLock is the exclusive flock(2) a process holds on a run's lock file
// while it runs that run, so that two processes never run one job (two
// `tune` commands on one checkpoint, a resume beside the run it resumes).
// The kernel drops the lock when the process dies, however it dies.
type runLock struct {
	f    *os.File
	path string
}

// lockFileFor is the lock file of the run whose checkpoint is ckpt: a
// hidden file beside it.
func lockFileFor(ckpt string) string {
	return filepath.Join(filepath.Dir(ckpt), "."+filepath.Base(ckpt)+".lock")
}

// lockRun takes the lock of the run whose checkpoint is ckpt (flag names
// it in errors), without waiting: a run another process holds is refused,
// naming that process.
func lockRun(flag, ckpt string) (*runLock, error) {
	path := lockFileFor(ckpt)
	for attempt := 0; attempt < 10; attempt++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s %s: cannot make its lock file %s: %w", flag, ckpt, path, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			pid, _ := os.ReadFile(path)
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				who := "another process"
				if p := strings.TrimSpace(string(pid)); p != "" {
					who = "process " + p
				}
				return nil, fmt.Errorf("%s %s: %s is running this job (it holds %s); wait for it to end, or give this run another --out or --checkpoint", flag, ckpt, who, path)
			}
			return nil, fmt.Errorf("%s %s: locking %s: %w", flag, ckpt, path, err)
		}
		// The holder before us removes the file as it ends: the lock
		// counts only on the file that is still at path.
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(held, now) {
			f.Close()
			continue
		}
		f.Truncate(0)
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		return &runLock{f: f, path: path}, nil
	}
	return nil, fmt.Errorf("%s %s: its lock file %s keeps being replaced", flag, ckpt, path)
}

// release removes the lock file and drops the lock.
func (l *runLock) release() {
	if l == nil {
		return
	}
	os.Remove(l.path)
	l.f.Close()
}
