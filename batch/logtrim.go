package batch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/paretonav/paretonav/finetune"
)

// logTrimmer keeps a resumed job's log free of repeated steps. A run
// killed after its last checkpoint has logged steps past it, which the
// resumed run logs again; the kill may also have cut its last line short.
// It is a finetune.Recorder that runs after the log's own
// (finetune.JSONLRecorder), whose Init has just appended the resumed
// run's configuration line: it cuts the log after the last line of the
// interrupted run that parses and whose step is at most the checkpoint's
// (Config.StartStep), and moves that configuration line there. The steps
// from StartStep+1 on then follow it once. The log's writer appends, so
// its next line lands after the cut.
type logTrimmer struct{ path string }

func (t *logTrimmer) Init(cfg *finetune.Config) error {
	f, err := os.OpenFile(t.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("continuing the log: %w", err)
	}
	defer f.Close()
	b, err := os.ReadFile(t.path)
	if err != nil {
		return fmt.Errorf("continuing the log: %w", err)
	}
	cut, last, ok := trimPoint(b, cfg.StartStep)
	if !ok {
		return nil
	}
	if _, err := f.WriteAt(last, int64(cut)); err != nil {
		return fmt.Errorf("continuing the log %s: %w", t.path, err)
	}
	if err := f.Truncate(int64(cut + len(last))); err != nil {
		return fmt.Errorf("continuing the log %s: %w", t.path, err)
	}
	return nil
}

func (t *logTrimmer) Record(*finetune.Step) error { return nil }

func (t *logTrimmer) Done(*finetune.Result) error { return nil }

// trimPoint finds, in a log whose last line is the configuration line
// just written (last), the end of the interrupted run's good lines: the
// longest run of lines from the start that parse as JSON objects whose
// step (when they have one) is at most start. The result line of a run
// interrupted at its checkpoint stays. ok is false when nothing needs cutting.
func trimPoint(b []byte, start int) (cut int, last []byte, ok bool) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return 0, nil, false
	}
	i := bytes.LastIndexByte(b[:len(b)-1], '\n') + 1
	last, body := b[i:], b[:i]
	var head struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(last, &head) != nil || head.Kind != "config" {
		return 0, nil, false
	}
	for cut < len(body) {
		n := bytes.IndexByte(body[cut:], '\n')
		if n < 0 {
			break
		}
		var line struct {
			Step *int `json:"step"`
		}
		if json.Unmarshal(body[cut:cut+n], &line) != nil || line.Step != nil && *line.Step > start {
			break
		}
		cut += n + 1
	}
	return cut, last, cut < len(body)
}
