package job

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/finetune/front"
	"github.com/paretonav/paretonav/png/criterion"
)

// FrontModel is one model in front's report.
type FrontModel struct {
	Model    int            `json:"model"`
	File     string         `json:"file,omitempty"`
	Losses   map[string]Num `json:"losses"`
	Accuracy map[string]Num `json:"accuracy,omitempty"`
	// Metrics are the task metrics on the scoring data (front.Meter).
	Metrics   map[string]map[string]Num `json:"metrics,omitempty"`
	G         Num                       `json:"g"`
	FrontDist *Num                      `json:"front_distance,omitempty"`
	Initial   map[string]Num            `json:"initial_losses"`
	// Terms are the --term values and Drift ‖θ − θ₀‖² (when the criterion
	// reads drift) at the end, on the last training batch.
	Terms map[string]Num `json:"terms,omitempty"`
	Drift *Num           `json:"drift,omitempty"`
	// Explanation is what this model's run did (its band share, the
	// control's steps and reasons, the steps Adam's step bound held):
	// Explanation.Short is the summary's line for it.
	Explanation *Explanation `json:"explanation,omitempty"`
}

// FrontQuality is a front.Quality in JSON. IGD+ is reported only
// against a reference front (--reference, or the true front of a synthetic
// problem): against the models' own non-dominated set it is 0 by
// construction and says nothing.
type FrontQuality struct {
	HV  Num   `json:"hv"`
	Ref []Num `json:"ref"`
	// HVNote explains an HV of 0: no model is below Ref in every task.
	HVNote       string `json:"hv_note,omitempty"`
	NonDominated int    `json:"non_dominated"`
	IGDPlus      *Num   `json:"igd_plus,omitempty"`
	// Reference names the front IGDPlus is measured against.
	Reference string `json:"igd_plus_reference,omitempty"`
}

// FrontOutcome is front's report (report.json and --json).
type FrontOutcome struct {
	Source    string            `json:"source"`
	Tasks     []string          `json:"tasks"`
	Criterion string            `json:"criterion"`
	Status    string            `json:"status"`
	Steps     int               `json:"steps"`
	ScoredOn  string            `json:"scored_on"`
	Examples  int               `json:"examples,omitempty"`
	Models    []FrontModel      `json:"models"`
	Loss      FrontQuality      `json:"loss_quality"`
	Accuracy  *FrontQuality     `json:"accuracy_quality,omitempty"`
	Gaps      []Num             `json:"neighbour_gaps,omitempty"`
	Files     map[string]string `json:"files"`
	// Checkpoint is the checkpoint left on disk (KeepCheckpoint);
	// CheckpointRemoved names the one removed once the models were
	// written.
	Checkpoint        string `json:"checkpoint,omitempty"`
	CheckpointRemoved string `json:"checkpoint_removed,omitempty"`
	// Warnings are what went wrong without costing a model.
	Warnings []string `json:"warnings,omitempty"`
}

// scoreAll measures every trained model: exact losses for synthetic
// problems, losses and accuracies on the scoring data for ONNX models.
func (j *Front) scoreAll(res *finetune.Result) ([]front.Member, error) {
	out := make([]front.Member, len(j.probs))
	for k, p := range j.probs {
		if err := p.SetParams(res.Points[k].Params); err != nil {
			return nil, err
		}
		if j.nets == nil {
			l := make([]float64, len(j.tasks))
			if err := p.Evaluate(nil, l, nil); err != nil {
				return nil, fmt.Errorf("model %d: %w", k, err)
			}
			out[k] = front.Member{Losses: l, Acc: nanSlice(len(l))}
			continue
		}
		l, a, met, err := front.ScoreMetrics(j.nets[k], j.btasks, j.score, j.batch)
		if err != nil {
			return nil, fmt.Errorf("model %d on the %s: %w", k, j.scoredOn, err)
		}
		out[k] = front.Member{Losses: l, Acc: a, Metrics: met}
	}
	return out, nil
}

func nanSlice(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// referenceFront returns the loss-space front IGD+ is measured against
// and its name: the points of path (--reference) when given, else the
// true front of a synthetic problem, else none.
func (j *Front) referenceFront(path string) ([][]float64, string, error) {
	if path != "" {
		pts, err := readReferenceFront(path, j.tasks)
		if err != nil {
			return nil, "", fmt.Errorf("--reference: %w", err)
		}
		return pts, fmt.Sprintf("%s (%d points)", path, len(pts)), nil
	}
	if j.synth == nil {
		return nil, "", nil
	}
	tf := j.synth.Front(200)
	pts := make([][]float64, len(tf))
	for i, p := range tf {
		pts[i] = []float64{p[0], p[1]}
	}
	return pts, fmt.Sprintf("the true front of %s (%d points)", j.source, len(pts)), nil
}

// readReferenceFront reads a CSV file of loss vectors, one point per row.
// A first row that is not all numbers is a header: the columns named
// loss_TASK (as in front.csv) or TASK are read, for every task; without a
// header every row has one loss per task, in task order.
func readReferenceFront(path string, tasks []string) ([][]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cols := make([]int, len(tasks))
	for i := range cols {
		cols[i] = i
	}
	if len(rows) > 0 && !allNumbers(rows[0]) {
		head := rows[0]
		rows = rows[1:]
		for i, t := range tasks {
			cols[i] = slices.IndexFunc(head, func(h string) bool {
				h = strings.TrimSpace(h)
				return h == "loss_"+t || h == t
			})
			if cols[i] < 0 {
				return nil, fmt.Errorf("%s: header %q has no column loss_%s or %s", path, strings.Join(head, ","), t, t)
			}
		}
	} else if len(rows) > 0 && len(rows[0]) != len(tasks) {
		return nil, fmt.Errorf("%s: %d columns and no header, want one loss per task (%s)", path, len(rows[0]), strings.Join(tasks, ", "))
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no points", path)
	}
	pts := make([][]float64, len(rows))
	for r, row := range rows {
		pts[r] = make([]float64, len(tasks))
		for i, c := range cols {
			if c >= len(row) {
				return nil, fmt.Errorf("%s: row %d has %d columns, want at least %d", path, r+1, len(row), c+1)
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(row[c]), 64)
			if err != nil || math.IsNaN(v) {
				return nil, fmt.Errorf("%s: row %d, column %d: %q is not a loss", path, r+1, c+1, row[c])
			}
			pts[r][i] = v
		}
	}
	return pts, nil
}

// allNumbers reports whether every field of row parses as a number.
func allNumbers(row []string) bool {
	for _, s := range row {
		if _, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			return false
		}
	}
	return true
}

// report assembles front's report from the run and the scores; IGD+ of
// the losses is measured against reference (named refName) when given.
func (j *Front) report(res *finetune.Result, ms []front.Member, ref []float64, reference [][]float64, refName, crit string) *FrontOutcome {
	out := &FrontOutcome{Source: j.source, Tasks: j.tasks, Criterion: crit, Status: res.Status.String(), Steps: res.Steps, ScoredOn: j.scoredOn}
	if j.score != nil {
		out.Examples = j.score.Len()
	}
	named := func(v []float64) map[string]Num {
		o := map[string]Num{}
		for i, t := range j.tasks {
			o[t] = Num(v[i])
		}
		return o
	}
	for k, m := range ms {
		mo := FrontModel{Model: k, Losses: named(m.Losses), G: Num(res.Points[k].G), Initial: named(res.Points[k].InitialLosses),
			Metrics: NumMetrics(m.Metrics)}
		if j.nets != nil {
			mo.Accuracy = named(m.Acc)
		}
		if j.synth != nil {
			d := Num(j.synth.FrontDistance([2]float64{m.Losses[0], m.Losses[1]}))
			mo.FrontDist = &d
		}
		if len(j.terms) > 0 {
			mo.Terms = map[string]Num{}
			for i, t := range j.terms {
				mo.Terms[t] = Num(res.Points[k].Terms[i])
			}
		}
		if j.s.PerModel != nil && slices.Contains(criterion.VarsOf(j.s.PerModel), criterion.Drift) {
			d := Num(res.Points[k].Drift)
			mo.Drift = &d
		}
		out.Models = append(out.Models, mo)
	}
	lp := front.LossPoints(ms)
	out.Loss = qualityOf(front.Measure(lp, ref, reference))
	if reference != nil {
		out.Loss.Reference = refName
	} else {
		out.Loss.IGDPlus = nil
	}
	if !anyBelow(lp, ref) {
		out.Loss.HVNote = fmt.Sprintf("no model's losses are below the reference point (%s) in every task; HV is 0 — pass --ref above the losses (the largest is %#.4g)",
			JoinFloats(ref), maxOf(lp))
	}
	if ap := front.AccPoints(ms); ap != nil && j.nets != nil {
		aq := qualityOf(front.Measure(ap, front.Uniform(len(j.tasks), 0), nil))
		for i := range aq.Ref {
			aq.Ref[i] = 0
		}
		aq.IGDPlus = nil // against the models' own set: 0 by construction
		out.Accuracy = &aq
	}
	if len(j.tasks) == 2 {
		out.Gaps = Nums(front.Gaps(front.LossPoints(ms)))
	}
	return out
}

func qualityOf(q front.Quality) FrontQuality {
	igd := Num(q.IGDPlus)
	return FrontQuality{HV: Num(q.HV), Ref: Nums(q.Ref), IGDPlus: &igd, NonDominated: q.NonDominated}
}

// anyBelow reports whether some point is below ref in every coordinate,
// so that it adds to the hypervolume.
func anyBelow(points [][]float64, ref []float64) bool {
	for _, p := range points {
		below := true
		for i, v := range p {
			below = below && v < ref[i]
		}
		if below {
			return true
		}
	}
	return false
}

// maxOf returns the largest coordinate of any point.
func maxOf(points [][]float64) float64 {
	m := math.Inf(-1)
	for _, p := range points {
		for _, v := range p {
			m = math.Max(m, v)
		}
	}
	return m
}

// JoinFloats writes v as "a, b, ..." (%g: as the user wrote them).
func JoinFloats[T ~float64](v []T) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%g", float64(x))
	}
	return strings.Join(parts, ", ")
}

// writeFrontCSV writes one row per model: model, the task losses, the
// task accuracies (empty where a task has none).
func writeFrontCSV(path string, tasks []string, ms []front.Member) error {
	var sb strings.Builder
	sb.WriteString("model")
	for _, t := range tasks {
		sb.WriteString(",loss_" + t)
	}
	for _, t := range tasks {
		sb.WriteString(",acc_" + t)
	}
	sb.WriteString("\n")
	for k, m := range ms {
		fmt.Fprintf(&sb, "%d", k)
		for _, v := range m.Losses {
			fmt.Fprintf(&sb, ",%.9g", v)
		}
		for _, v := range m.Acc {
			if math.IsNaN(v) {
				sb.WriteString(",")
			} else {
				fmt.Fprintf(&sb, ",%.6f", v)
			}
		}
		sb.WriteString("\n")
	}
	if err := WriteFile(path, []byte(sb.String())); err != nil {
		return fmt.Errorf("--out-dir: %w", err)
	}
	return nil
}
