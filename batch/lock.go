package batch

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// A process runs a job only while it holds an exclusive flock(2) on the
// job's LockFile; it writes the manifest only while it holds one on the
// out folder's ManifestLock. The kernel releases a lock when its process
// dies, however it dies, so a killed run leaves no stale lock behind.
// Status probes a job's lock with a shared lock, which an exclusive
// holder refuses. On NFS, Linux's client maps flock to the server's byte
// range locks, so processes on several hosts sharing an out folder
// exclude each other too (Lustre needs its flock mount option).
const (
	LockFile     = "lock"
	ManifestLock = "jobs.lock"
)

// lockRetries bound how long tryLock waits while only probes (shared
// locks, held for microseconds) stand in its way.
const (
	lockRetries = 200
	lockPause   = 2 * time.Millisecond
)

// tryLock takes the exclusive lock on path (created when missing)
// without waiting for another process's run: it returns the open file
// holding it, or nil when another process holds it exclusively.
func tryLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	for i := 0; ; i++ {
		err := flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		// A shared lock succeeds when only probes hold the file: retry.
		// It fails while a run holds it exclusively.
		if i >= lockRetries || flock(fd, syscall.LOCK_SH|syscall.LOCK_NB) != nil {
			f.Close()
			return nil, nil
		}
		flock(fd, syscall.LOCK_UN)
		time.Sleep(lockPause)
	}
}

// lockWait takes the exclusive lock on path (created when missing),
// waiting for it; closing the file releases it.
func lockWait(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return f, nil
}

// lockHeld reports whether a process (this one included) holds the
// exclusive lock on path. It takes a shared lock for an instant and
// creates nothing.
func lockHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// flock is syscall.Flock, retried when a signal interrupts it.
func flock(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
