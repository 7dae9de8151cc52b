package batch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/job"
)

// Result is a done job's result.json.
type Result struct {
	ID   string              `json:"id"`
	Name string              `json:"name"`
	Kind string              `json:"kind"`
	Keys map[string][]string `json:"keys"`
	// Tasks, with the final task losses, F and g where the kind has them
	// (tune: after training, on the report set; eval: on the data).
	Tasks   []string           `json:"tasks,omitempty"`
	Losses  map[string]job.Num `json:"losses,omitempty"`
	F       *job.Num           `json:"F,omitempty"`
	G       *job.Num           `json:"g,omitempty"`
	Metrics map[string]job.Num `json:"metrics,omitempty"`
	Steps   int                `json:"steps"`
	// Seconds is the job's wall time in this process (preparing, running,
	// writing); TrainSeconds the training loop's, from its first step to
	// its last.
	Seconds      float64 `json:"seconds"`
	TrainSeconds float64 `json:"train_seconds"`
	Resumed      bool    `json:"resumed,omitempty"`
	// Files are the job's outputs, relative to the out folder.
	Files map[string]string `json:"files"`
	// Explanation is a tune job's run in one line (its outcome's
	// explanation.short; the outcome holds the whole explanation).
	Explanation string `json:"explanation,omitempty"`
	Outcome     any    `json:"outcome"`
}

// ReadResult reads job j's result.json in the out folder dir and checks
// that it holds what collect reads: it parses, names the job's ID and
// kind, lists its files and, by kind, its tasks with a loss each and F
// and g (tune), g (eval) or the front's hypervolume (front). A truncated
// or foreign result.json is an error naming the file; a missing one
// wraps fs.ErrNotExist.
func ReadResult(dir string, j Job) (*Result, error) {
	p := filepath.Join(dir, j.ID, ResultFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s (%d bytes): %w", p, len(b), err)
	}
	var missing []string
	need := func(ok bool, what string) {
		if !ok {
			missing = append(missing, what)
		}
	}
	need(res.ID == j.ID, fmt.Sprintf("id %q", j.ID))
	need(res.Kind == j.Kind, fmt.Sprintf("kind %q", j.Kind))
	need(res.Files != nil || j.Kind == KindEval, "files")
	need(len(res.Tasks) > 0, "tasks")
	switch j.Kind {
	case KindTune, KindEval:
		for _, t := range res.Tasks {
			_, ok := res.Losses[t]
			need(ok, fmt.Sprintf("a loss for task %q", t))
		}
		need(res.G != nil, "g")
		need(res.F != nil || j.Kind == KindEval, "F")
	case KindFront:
		_, ok := res.Metrics["front_hv"]
		need(ok, "metrics.front_hv")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: no %s", p, strings.Join(missing, ", no "))
	}
	return &res, nil
}

// fillResult copies the final losses, F, g and steps of a job's outcome.
func fillResult(res *Result, out any) {
	switch o := out.(type) {
	case *job.TuneOutcome:
		res.Tasks, res.Losses, res.Steps = o.Tasks, o.After.Losses, o.Steps
		res.F, res.G = &o.After.F, &o.After.G
		res.Metrics = flatMetrics(o.After.Metrics)
		if o.Explanation != nil {
			res.Explanation = o.Explanation.Short
		}
	case *job.EvalOutcome:
		res.Tasks, res.Losses, res.G = o.Names, o.Tasks, &o.G
		res.Metrics = flatMetrics(o.Metrics)
	case *job.FrontOutcome:
		res.Tasks, res.Steps = o.Tasks, o.Steps
		hv, nd := o.Loss.HV, job.Num(o.Loss.NonDominated)
		res.Metrics = map[string]job.Num{"front_hv": hv, "front_non_dominated": nd}
	}
}

// flatMetrics names each task metric TASK/METRIC (nil when there are
// none).
func flatMetrics(m map[string]map[string]job.Num) map[string]job.Num {
	if len(m) == 0 {
		return nil
	}
	out := map[string]job.Num{}
	for task, ms := range m {
		for name, v := range ms {
			out[task+"/"+name] = v
		}
	}
	return out
}

// writeJSON writes v indented to path, atomically.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return job.WriteFile(path, append(b, '\n'))
}

// loopTimer is a finetune.Recorder timing the training loop from its
// start to its end.
type loopTimer struct{ start, end time.Time }

func (t *loopTimer) Init(*finetune.Config) error { t.start = time.Now(); return nil }

func (t *loopTimer) Record(*finetune.Step) error { return nil }

func (t *loopTimer) Done(*finetune.Result) error { t.end = time.Now(); return nil }

func (t *loopTimer) seconds() float64 {
	if t.start.IsZero() || t.end.IsZero() {
		return 0
	}
	return t.end.Sub(t.start).Seconds()
}
