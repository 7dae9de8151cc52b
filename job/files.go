package job

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/internal/atomicfile"
)

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

// sideFile is a per-step file (the JSON-lines log, the CSV trace) written
// through atomicfile.File: a temporary file beside its path replaces an
// existing file there only once the run's first step is recorded (a run
// that fails to start leaves it as it was), after which the file grows in
// place, readable while the run goes on; it is synced at every checkpoint,
// so that it holds the steps the checkpoint holds. A failure writing it is
// kept, not returned: the run and its model go on without it, and closing
// reports it.
type sideFile struct {
	flag    string
	f       *atomicfile.File
	rec     finetune.Recorder
	started bool
	live    bool // committed after the first step
	err     error
}

func (s *sideFile) do(f func() error) {
	if s.err == nil {
		if err := f(); err != nil {
			s.err = fmt.Errorf("%s %s: %w (the file stops at the last step written; the run went on)", s.flag, s.f.Name(), err)
		}
	}
}

func (s *sideFile) Init(cfg *finetune.Config) error {
	s.started = true
	s.do(func() error { return s.rec.Init(cfg) })
	return nil
}

func (s *sideFile) Record(st *finetune.Step) error {
	s.do(func() error { return s.rec.Record(st) })
	if !s.live {
		// From the first step on the file grows in place, where
		// `tail -f` and a batch's progress see it.
		s.live = true
		s.do(s.f.Commit)
	}
	return nil
}

func (s *sideFile) Done(res *finetune.Result) error {
	s.do(func() error { return s.rec.Done(res) })
	return nil
}

// Checkpointed commits what the file holds.
func (s *sideFile) Checkpointed(int) error {
	s.do(s.f.Commit)
	return nil
}

// close commits the file when the run started (a failed or interrupted
// run's log tells what happened) and returns the first failure.
func (s *sideFile) close() error {
	if err := s.f.Close(s.started); err != nil && s.err == nil {
		s.err = fmt.Errorf("%s %s: %w", s.flag, s.f.Name(), err)
	}
	return s.err
}

// TraceRecorders opens the per-step CSV trace at csvPath (given with the
// flag csvFlag, "--csv" or "--trace") and the JSON-lines log at logPath
// (--log), each only when its path is set, and returns their recorders in
// that order with a closer for the files. Each file is written beside its
// path and renamed over it at the end (sideFile); a failure writing one
// does not stop the run and is returned by the closer. On error the files
// already open are removed.
func TraceRecorders(csvFlag, csvPath, logPath string) (recs []finetune.Recorder, closeAll func() error, err error) {
	return traceRecorders(csvFlag, csvPath, logPath, -1)
}

// traceRecorders is TraceRecorders; with resumeStep ≥ 0 a resumed run's
// files are continued: the new file starts with the existing one's lines
// up to that step (logPrefix, csvPrefix: lines of later steps and a torn
// last line are dropped), then the
// recorders add the resumed run's lines (the log its configuration line
// again).
func traceRecorders(csvFlag, csvPath, logPath string, resumeStep int) (recs []finetune.Recorder, closeAll func() error, err error) {
	var files []*sideFile
	closeAll = func() error {
		var errs []error
		for i := len(files) - 1; i >= 0; i-- {
			errs = append(errs, files[i].close())
		}
		return errors.Join(errs...)
	}
	for _, out := range []struct {
		flag, path string
		keep       func(io.Reader, int) ([]byte, error)
		make       func(w io.Writer, cont bool) finetune.Recorder
	}{
		{csvFlag, csvPath, csvPrefix, func(w io.Writer, cont bool) finetune.Recorder {
			r := finetune.NewCSVRecorder(w)
			r.Continue = cont
			return r
		}},
		{"--log", logPath, logPrefix, func(w io.Writer, _ bool) finetune.Recorder { return finetune.NewJSONLRecorder(w) }},
	} {
		if out.path == "" {
			continue
		}
		var prefix []byte
		if resumeStep >= 0 {
			if prefix, err = continued(out.path, resumeStep, out.keep); err != nil {
				return nil, nil, errors.Join(fmt.Errorf("%s %s: %w", out.flag, out.path, err), closeAll())
			}
		}
		f, err := atomicfile.Create(out.path, 0o644)
		if err == nil && len(prefix) > 0 {
			if _, err = f.Write(prefix); err != nil {
				f.Close(false)
			}
		}
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("%s %s: %w", out.flag, out.path, err), closeAll())
		}
		sf := &sideFile{flag: out.flag, f: f, rec: out.make(f, len(prefix) > 0)}
		files = append(files, sf)
		recs = append(recs, sf)
	}
	return recs, closeAll, nil
}

// continued returns the lines of the file at path that a run resumed
// after step keeps (keep says which); nothing when the file does not
// exist.
func continued(path string, step int, keep func(io.Reader, int) ([]byte, error)) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return keep(f, step)
}

// logPrefix keeps a JSON-lines log's configuration lines, the step lines
// up to step and the result lines of runs interrupted by then; later steps,
// the result of a run that reached its end (killed before its model was
// written: the resumed run writes the result again) and lines that do not
// parse (a line torn by a killed process) are dropped.
func logPrefix(r io.Reader, step int) ([]byte, error) {
	var out bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var line struct {
			Kind   string `json:"kind"`
			Step   *int   `json:"step"`
			Steps  *int   `json:"steps"`
			Status string `json:"status"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if line.Kind == "config" || (line.Kind == "" && line.Step != nil && *line.Step <= step) ||
			(line.Kind == "result" && line.Steps != nil && *line.Steps <= step && line.Status == finetune.Interrupted.String()) {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
		}
	}
	return out.Bytes(), sc.Err()
}

// csvPrefix keeps a CSV trace's header and its rows up to step.
func csvPrefix(r io.Reader, step int) ([]byte, error) {
	var out bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			first = false
			if !strings.HasPrefix(line, "step") {
				return nil, errors.New("not a per-step trace (its first line is not the header)")
			}
		} else {
			s, _, _ := strings.Cut(line, ",")
			if n, err := strconv.Atoi(s); err != nil || n > step {
				continue
			}
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	return out.Bytes(), sc.Err()
}
