package batch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/paretonav/paretonav/job"
)

// Files of the out folder and of each job's folder.
const (
	// ManifestFile (in the out folder) lists the batch's jobs, so that
	// status and collect know the pending ones.
	ManifestFile = "jobs.json"
	ConfigFile   = "config.json" // the job and its resolved configuration
	ResultFile   = "result.json" // written last: the job is done
	ErrorFile    = "error.txt"   // the job failed: the error
	RunningFile  = "running"     // the process holding the job's lock: host pid (LockFile decides)
	LogFile      = "log.jsonl"   // the training loop's log
	ModelFile    = "model.onnx"  // a tune job's model
	CheckpointFn = "checkpoint.ckpt"
)

// States of a job.
const (
	StateDone    = "done"
	StateFailed  = "failed"
	StateRunning = "running"
	StatePending = "pending"
)

// Manifest is the out folder's jobs.json.
type Manifest struct {
	File string `json:"file"`
	Jobs []Job  `json:"jobs"`
}

// WriteManifest writes dir/jobs.json (atomically: shards write the same
// content side by side).
func WriteManifest(dir, file string, jobs []Job) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out-dir: %w", err)
	}
	b, err := json.MarshalIndent(Manifest{File: file, Jobs: jobs}, "", "  ")
	if err != nil {
		return err
	}
	return job.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'))
}

// ReadManifest reads dir/jobs.json.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("%s: no batch here (run batch run, slurm or k8s with --out-dir %s first): %w", dir, dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}

// JobState is a job's state as its folder shows it.
type JobState struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	State string `json:"state"`
	// Checkpoint is set for a pending job that will resume from one.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Error is a failed job's error (its first line).
	Error string `json:"error,omitempty"`
	// Where is the running job's "host pid".
	Where string `json:"where,omitempty"`
	// Invalid says why a result.json present does not count: the job is
	// not done and runs again.
	Invalid string `json:"invalid,omitempty"`
}

// StateOf reads job j's state in the out folder dir: done when its
// result.json exists and holds what collect reads (ReadResult), running
// when a process holds its lock (LockFile), failed when its error
// exists, else pending (Invalid then says what is wrong with a
// result.json that does not count).
func StateOf(dir string, j Job) JobState {
	jd := filepath.Join(dir, j.ID)
	st := JobState{ID: j.ID, Name: j.Name, Kind: j.Kind, State: StatePending}
	if _, err := ReadResult(dir, j); err == nil {
		st.State = StateDone
		return st
	} else if !errors.Is(err, fs.ErrNotExist) {
		st.Invalid = err.Error()
	}
	if lockHeld(filepath.Join(jd, LockFile)) {
		st.State, st.Where = StateRunning, "another process"
		if b, err := os.ReadFile(filepath.Join(jd, RunningFile)); err == nil && strings.TrimSpace(string(b)) != "" {
			st.Where = strings.TrimSpace(string(b))
		}
		return st
	}
	if b, err := os.ReadFile(filepath.Join(jd, ErrorFile)); err == nil {
		st.State = StateFailed
		st.Error, _, _ = strings.Cut(strings.TrimSpace(string(b)), "\n")
		return st
	}
	if ck := filepath.Join(jd, CheckpointFn); exists(ck) {
		st.Checkpoint = ck
	}
	return st
}

// marker is the content of a running job's marker: host and pid.
func marker() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s %d\n", host, os.Getpid())
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
