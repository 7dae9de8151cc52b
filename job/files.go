package job

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/internal/atomicfile"
)

// CheckOutput refuses to write out over the input model in, and over an
// existing file without force.
func CheckOutput(in, out string, force bool) error {
	if same, err := SamePath(in, out); err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	} else if same {
		return fmt.Errorf("--out %s: that is the input model; paretonav never overwrites its input (choose another --out)", out)
	}
	if _, err := os.Stat(out); err == nil && !force {
		return fmt.Errorf("--out %s: file exists (use --force to overwrite)", out)
	}
	return nil
}

// SamePath reports whether a and b name the same file (the same absolute
// path, or the same existing file through links).
func SamePath(a, b string) (bool, error) {
	aa, err := filepath.Abs(a)
	if err != nil {
		return false, err
	}
	bb, err := filepath.Abs(b)
	if err != nil {
		return false, err
	}
	if aa == bb {
		return true, nil
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb), nil
}

// WriteFile writes b to a temporary file beside path and renames it over
// path (internal/atomicfile).
func WriteFile(path string, b []byte) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(b))
		return err
	})
}

// fileRecorder opens path (for appending when add is set, else
// replacing it) and returns the recorder make builds on it, with a closer
// for the file.
func fileRecorder(flag, path string, add bool, make func(io.Writer) finetune.Recorder) (finetune.Recorder, func() error, error) {
	mode := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if add {
		mode = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(path, mode, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", flag, err)
	}
	return make(f), f.Close, nil
}

// TraceRecorders opens the per-step CSV trace at csvPath (given with the
// flag csvFlag, "--csv" or "--trace") and the JSON-lines log at logPath
// (--log), each only when its path is set, and returns their recorders in
// that order with a closer for the files. On error the files already open
// are closed.
func TraceRecorders(csvFlag, csvPath, logPath string) (recs []finetune.Recorder, closeAll func() error, err error) {
	return traceRecorders(csvFlag, csvPath, logPath, false)
}

// traceRecorders is TraceRecorders; with appendLog the log is continued
// (a resumed run's log: its configuration line again, then the steps from
// the checkpoint on) instead of replaced.
func traceRecorders(csvFlag, csvPath, logPath string, appendLog bool) (recs []finetune.Recorder, closeAll func() error, err error) {
	var closers []func() error
	closeAll = func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		return errors.Join(errs...)
	}
	for _, out := range []struct {
		flag, path string
		add        bool
		make       func(io.Writer) finetune.Recorder
	}{
		{csvFlag, csvPath, false, func(w io.Writer) finetune.Recorder { return finetune.NewCSVRecorder(w) }},
		{"--log", logPath, appendLog, func(w io.Writer) finetune.Recorder { return finetune.NewJSONLRecorder(w) }},
	} {
		if out.path == "" {
			continue
		}
		rec, closer, err := fileRecorder(out.flag, out.path, out.add, out.make)
		if err != nil {
			return nil, nil, errors.Join(err, closeAll())
		}
		closers = append(closers, closer)
		recs = append(recs, rec)
	}
	return recs, closeAll, nil
}
