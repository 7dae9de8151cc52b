package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/paretonav/paretonav/finetune"
)

// writeJSON prints v as one indented JSON object followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jnum is a float64 that prints NaN and ±Inf as null (JSON has no such
// numbers).
type jnum float64

func (f jnum) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

func jnums(v []float64) []jnum {
	out := make([]jnum, len(v))
	for i, x := range v {
		out[i] = jnum(x)
	}
	return out
}

func jnums32(v []float32) []jnum {
	out := make([]jnum, len(v))
	for i, x := range v {
		out[i] = jnum(x)
	}
	return out
}

// trajectories is a finetune.Recorder keeping every model's first two
// losses at every step, for plots.
type trajectories struct{ pts [][][2]float64 }

func (t *trajectories) Init(cfg *finetune.Config) error {
	t.pts = make([][][2]float64, cfg.Models)
	return nil
}

func (t *trajectories) Record(st *finetune.Step) error {
	for k, p := range st.Points {
		t.pts[k] = append(t.pts[k], [2]float64{p.Losses[0], p.Losses[1]})
	}
	return nil
}

// Done appends the final losses.
func (t *trajectories) Done(res *finetune.Result) error {
	if res == nil || res.Status != finetune.StepLimit {
		return nil
	}
	for k, p := range res.Points {
		t.pts[k] = append(t.pts[k], [2]float64{p.Losses[0], p.Losses[1]})
	}
	return nil
}

// fileRecorder opens path and returns the recorder make builds on it, with
// a closer for the file.
func fileRecorder(flag, path string, make func(io.Writer) finetune.Recorder) (finetune.Recorder, func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", flag, err)
	}
	return make(f), f.Close, nil
}

// traceRecorders opens the per-step CSV trace at csvPath (given with the
// flag csvFlag, "--csv" or "--trace") and the JSON-lines log at logPath
// (--log), each only when its path is set, and returns their recorders in
// that order with a closer for the files. On error the files already open
// are closed.
func traceRecorders(csvFlag, csvPath, logPath string) (recs []finetune.Recorder, closeAll func() error, err error) {
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
		make       func(io.Writer) finetune.Recorder
	}{
		{csvFlag, csvPath, func(w io.Writer) finetune.Recorder { return finetune.NewCSVRecorder(w) }},
		{"--" + logFlag.Name, logPath, func(w io.Writer) finetune.Recorder { return finetune.NewJSONLRecorder(w) }},
	} {
		if out.path == "" {
			continue
		}
		rec, closer, err := fileRecorder(out.flag, out.path, out.make)
		if err != nil {
			return nil, nil, errors.Join(err, closeAll())
		}
		closers = append(closers, closer)
		recs = append(recs, rec)
	}
	return recs, closeAll, nil
}
