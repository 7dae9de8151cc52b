package batch

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/paretonav/paretonav/job"
)

// Row is one job in the collected results.
type Row struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	// Model is the model's index within a front job, which has a row per
	// model; nil for the other kinds.
	Model *int `json:"model,omitempty"`
	// Keys are the job's values of the keys that vary across the batch.
	Keys    map[string]string  `json:"keys"`
	Losses  map[string]job.Num `json:"losses,omitempty"`
	F       *job.Num           `json:"F,omitempty"`
	G       *job.Num           `json:"g,omitempty"`
	Metrics map[string]job.Num `json:"metrics,omitempty"`
	Steps   int                `json:"steps"`
	Seconds float64            `json:"seconds"`
	// NonDominated: no other done job has losses as low in every task
	// and lower in one.
	NonDominated bool              `json:"non_dominated"`
	Files        map[string]string `json:"files,omitempty"`
	Error        string            `json:"error,omitempty"`
	// Explanation is the run in one line (a tune job's, a front model's;
	// job.Explanation.Short).
	Explanation string `json:"explanation,omitempty"`
}

// Collection is a batch's collected results (results.json).
type Collection struct {
	Dir         string            `json:"dir"`
	Tasks       []string          `json:"tasks"`
	VaryingKeys []string          `json:"varying_keys"`
	Metrics     []string          `json:"metrics"`
	Rows        []Row             `json:"rows"`
	Files       map[string]string `json:"files"`
}

// Collect reads every job of the batch in dir and writes dir/results.csv,
// results.json and report.html.
func Collect(dir string) (*Collection, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	col := &Collection{Dir: dir, VaryingKeys: varyingKeys(m.Jobs)}
	metrics := map[string]bool{}
	for _, j := range m.Jobs {
		st := StateOf(dir, j)
		row := Row{ID: j.ID, Name: j.Name, Kind: j.Kind, Status: st.State, Keys: map[string]string{}, Error: st.Error}
		if st.Invalid != "" {
			row.Error = st.Invalid
		}
		for _, k := range col.VaryingKeys {
			row.Keys[k] = strings.Join(j.Keys[k], ",")
		}
		if st.State == StateDone {
			res, err := ReadResult(dir, j)
			if err != nil { // changed since StateOf read it
				row.Status, row.Error = StatePending, err.Error()
				col.Rows = append(col.Rows, row)
				continue
			}
			row.Losses, row.F, row.G, row.Metrics = res.Losses, res.F, res.G, res.Metrics
			row.Steps, row.Seconds, row.Files, row.Explanation = res.Steps, res.Seconds, res.Files, res.Explanation
			for _, t := range res.Tasks {
				if !slices.Contains(col.Tasks, t) {
					col.Tasks = append(col.Tasks, t)
				}
			}
			rows := []Row{row}
			if j.Kind == KindFront {
				rows = frontRows(row, res)
			}
			for _, r := range rows {
				for k := range r.Metrics {
					metrics[k] = true
				}
			}
			col.Rows = append(col.Rows, rows...)
			continue
		}
		col.Rows = append(col.Rows, row)
	}
	for k := range metrics {
		col.Metrics = append(col.Metrics, k)
	}
	sort.Strings(col.Metrics)
	markNonDominated(col.Rows, col.Tasks)

	col.Files = map[string]string{"csv": filepath.Join(dir, "results.csv"), "json": filepath.Join(dir, "results.json"),
		"html": filepath.Join(dir, "report.html")}
	text, err := col.csv()
	if err != nil {
		return nil, err
	}
	if err := job.WriteFile(col.Files["csv"], []byte(text)); err != nil {
		return nil, err
	}
	if err := writeJSON(col.Files["json"], col); err != nil {
		return nil, err
	}
	page, err := col.html()
	if err != nil {
		return nil, err
	}
	if err := job.WriteFile(col.Files["html"], page); err != nil {
		return nil, err
	}
	return col, nil
}

// frontRows expands a done front job's row into one row per model: its
// losses, g and metrics (with the job's front_hv and front_non_dominated),
// its model file, and the job's log. A result without models (written by
// an older paretonav) keeps its one row.
func frontRows(row Row, res *Result) []Row {
	var out struct {
		Models []job.FrontModel `json:"models"`
	}
	b, err := json.Marshal(res.Outcome)
	if err != nil || json.Unmarshal(b, &out) != nil || len(out.Models) == 0 {
		return []Row{row}
	}
	rows := make([]Row, 0, len(out.Models))
	for k, m := range out.Models {
		r := row
		idx := k
		g := m.G
		r.Model, r.Losses, r.G = &idx, m.Losses, &g
		if m.Explanation != nil {
			r.Explanation = m.Explanation.Short
		}
		r.Metrics = map[string]job.Num{}
		for name, v := range row.Metrics {
			r.Metrics[name] = v
		}
		for task, ms := range m.Metrics {
			for name, v := range ms {
				r.Metrics[task+"/"+name] = v
			}
		}
		r.Files = map[string]string{}
		if f := row.Files[fmt.Sprintf("model_%d", k)]; f != "" {
			r.Files["model"] = f
		}
		if f := row.Files["log"]; f != "" {
			r.Files["log"] = f
		}
		rows = append(rows, r)
	}
	return rows
}

// varyingKeys lists, sorted, the keys whose values differ between jobs
// (or that some jobs lack).
func varyingKeys(jobs []Job) []string {
	all := map[string]bool{}
	for _, j := range jobs {
		for k := range j.Keys {
			all[k] = true
		}
	}
	var out []string
	for k := range all {
		first := strings.Join(jobs[0].Keys[k], "\x00")
		_, has := jobs[0].Keys[k]
		for _, j := range jobs[1:] {
			v, ok := j.Keys[k]
			if ok != has || strings.Join(v, "\x00") != first {
				out = append(out, k)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// lossVector returns the row's losses in task order, or nil when one is
// missing or not finite.
func (r *Row) lossVector(tasks []string) []float64 {
	if r.Status != StateDone || len(tasks) == 0 {
		return nil
	}
	v := make([]float64, len(tasks))
	for i, t := range tasks {
		l, ok := r.Losses[t]
		if !ok || math.IsNaN(float64(l)) || math.IsInf(float64(l), 0) {
			return nil
		}
		v[i] = float64(l)
	}
	return v
}

// markNonDominated marks the done rows whose loss vectors no other row's
// dominates.
func markNonDominated(rows []Row, tasks []string) {
	vecs := make([][]float64, len(rows))
	for i := range rows {
		vecs[i] = rows[i].lossVector(tasks)
	}
	for i, a := range vecs {
		if a == nil {
			continue
		}
		dominated := false
		for k, b := range vecs {
			if k != i && b != nil && dominates(b, a) {
				dominated = true
				break
			}
		}
		rows[i].NonDominated = !dominated
	}
}

// dominates reports whether a is no worse than b everywhere and better
// somewhere (losses: lower is better).
func dominates(a, b []float64) bool {
	better := false
	for i := range a {
		if a[i] > b[i] {
			return false
		}
		better = better || a[i] < b[i]
	}
	return better
}

// columns are the table's columns: name and the cell of each row.
func (c *Collection) columns() []column {
	cols := []column{
		{"id", false, func(r *Row) string { return r.ID }},
		{"name", false, func(r *Row) string { return r.Name }},
		{"kind", false, func(r *Row) string { return r.Kind }},
		{"status", false, func(r *Row) string { return r.Status }},
	}
	if slices.ContainsFunc(c.Rows, func(r Row) bool { return r.Model != nil }) {
		cols = append(cols, column{"model", true, func(r *Row) string {
			if r.Model == nil {
				return ""
			}
			return strconv.Itoa(*r.Model)
		}})
	}
	for _, k := range c.VaryingKeys {
		cols = append(cols, column{k, false, func(r *Row) string { return r.Keys[k] }})
	}
	for _, t := range c.Tasks {
		cols = append(cols, column{"loss_" + t, true, func(r *Row) string { return numText(r.Losses, t) }})
	}
	cols = append(cols,
		column{"F", true, func(r *Row) string { return ptrText(r.F) }},
		column{"g", true, func(r *Row) string { return ptrText(r.G) }})
	for _, m := range c.Metrics {
		cols = append(cols, column{m, true, func(r *Row) string { return numText(r.Metrics, m) }})
	}
	cols = append(cols,
		column{"steps_taken", true, func(r *Row) string {
			if r.Status != StateDone {
				return ""
			}
			return strconv.Itoa(r.Steps)
		}},
		column{"seconds", true, func(r *Row) string {
			if r.Status != StateDone {
				return ""
			}
			return strconv.FormatFloat(r.Seconds, 'f', 3, 64)
		}},
		column{"non_dominated", false, func(r *Row) string { return strconv.FormatBool(r.NonDominated) }})
	if slices.ContainsFunc(c.Rows, func(r Row) bool { return r.Explanation != "" }) {
		cols = append(cols, column{"explanation", false, func(r *Row) string { return r.Explanation }})
	}
	return cols
}

// column is one column of results.csv and of the page's table.
type column struct {
	Name    string
	Numeric bool
	cell    func(*Row) string
}

func numText(m map[string]job.Num, k string) string {
	v, ok := m[k]
	if !ok {
		return ""
	}
	return ptrText(&v)
}

func ptrText(v *job.Num) string {
	if v == nil || math.IsNaN(float64(*v)) || math.IsInf(float64(*v), 0) {
		return ""
	}
	return strconv.FormatFloat(float64(*v), 'g', 9, 64)
}

// csv renders results.csv.
func (c *Collection) csv() (string, error) {
	cols := c.columns()
	var b strings.Builder
	w := csv.NewWriter(&b)
	head := make([]string, len(cols))
	for i, col := range cols {
		head[i] = col.Name
	}
	w.Write(head)
	for i := range c.Rows {
		rec := make([]string, len(cols))
		for k, col := range cols {
			rec[k] = col.cell(&c.Rows[i])
		}
		w.Write(rec)
	}
	w.Flush()
	return b.String(), w.Error()
}

// Jobs is the number of jobs collected (a front job has a row per model).
func (c *Collection) Jobs() int {
	n := 0
	for _, r := range c.Rows {
		if r.Model == nil || *r.Model == 0 {
			n++
		}
	}
	return n
}
