package cli

import (
	"encoding/json"
	"io"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/job"
)

// writeJSON prints v as one indented JSON object followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jnum is a float64 that prints NaN and ±Inf as null (JSON has no such
// numbers).
type jnum = job.Num

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
