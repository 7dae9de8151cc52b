package bench

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// metricTitles are the column titles of the results table.
var metricTitles = map[string]string{
	"hv_loss":  "HV loss ↑",
	"igd_loss": "IGD+ loss ↓",
	"hv_acc":   "HV acc ↑",
	"igd_acc":  "IGD+ acc ↓",
}

// Datasets returns the datasets of r in the order they were run.
func (r *Results) Datasets() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range r.Seeds {
		if !seen[s.Dataset] {
			seen[s.Dataset] = true
			out = append(out, s.Dataset)
		}
	}
	return out
}

// metricHeader ends a Markdown table's header row, begun with its first
// column, with a column per metric, and writes the separator row.
func metricHeader(sb *strings.Builder) {
	for _, m := range Metrics {
		fmt.Fprintf(sb, " %s |", metricTitles[m])
	}
	sb.WriteString("\n|---|")
	for range Metrics {
		sb.WriteString("---|")
	}
	sb.WriteString("\n")
}

// WriteMarkdown writes the results table: per dataset, one row per method
// with mean ± std over seeds of every metric, then the paired t-tests of
// PNG against each baseline (t, p; positive t: PNG's value is larger).
func WriteMarkdown(w io.Writer, r *Results) error {
	b := r.Budget
	var sb strings.Builder
	fmt.Fprintf(&sb, "# paretonav bench multimnist — budget %s\n\n", b.Name)
	fmt.Fprintf(&sb, "%d seeds; %d training / %d test pairs; batch %d, Adam lr 1e-3; phase 1: %d linear steps; "+
		"phase 2: %d steps per method; checkpoints at phase-2 steps %v; %d models per method. "+
		"HV: losses below (%g, %g), accuracies above (%g, %g) (the paper's references). IGD+: against the non-dominated union of all methods' checkpoints "+
		"(per dataset and seed). Values: mean ± std over seeds. Took %s.\n",
		b.Seeds, b.TrainExamples, b.TestExamples, b.Batch, b.WarmSteps, b.Steps, b.CheckpointSteps(), b.Models,
		LossRef, LossRef, AccRef, AccRef, r.Elapsed.Round(1e9))
	for _, ds := range r.Datasets() {
		fmt.Fprintf(&sb, "\n## %s\n\n| method |", ds)
		metricHeader(&sb)
		for _, method := range Methods {
			cells := r.Table[ds][method]
			if cells == nil {
				continue
			}
			fmt.Fprintf(&sb, "| %s |", method)
			for _, m := range Metrics {
				if c := cells[m]; c != nil {
					fmt.Fprintf(&sb, " %s ± %s |", num(c.Mean), num(c.Std))
				} else {
					sb.WriteString(" – |")
				}
			}
			sb.WriteString("\n")
		}
		fmt.Fprintf(&sb, "\nPaired t-test, PNG vs baseline (t on PNG − baseline, %d seeds, two-sided p):\n\n| baseline |", b.Seeds)
		metricHeader(&sb)
		for _, method := range Methods {
			if method == "png" || r.Table[ds][method] == nil {
				continue
			}
			fmt.Fprintf(&sb, "| %s |", method)
			for _, m := range Metrics {
				if c := r.Table[ds][method][m]; c != nil && c.VsPNG != nil {
					fmt.Fprintf(&sb, " t=%s, p=%s |", num(c.VsPNG.T), num(c.VsPNG.P))
				} else {
					sb.WriteString(" – |")
				}
			}
			sb.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 0):
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%.4g", v)
}

// JSON returns r as a JSON-friendly value (NaN and ±Inf as nil).
func (r *Results) JSON() map[string]any {
	table := map[string]any{}
	dss := r.Datasets()
	sort.Strings(dss)
	for _, ds := range dss {
		byMethod := map[string]any{}
		for method, byMetric := range r.Table[ds] {
			mm := map[string]any{}
			for metric, c := range byMetric {
				cell := map[string]any{"mean": jf(c.Mean), "std": jf(c.Std), "values": jfs(c.Values)}
				if c.VsPNG != nil {
					cell["png_vs"] = map[string]any{"t": jf(c.VsPNG.T), "p": jf(c.VsPNG.P), "df": c.VsPNG.DF}
				}
				mm[metric] = cell
			}
			byMethod[method] = mm
		}
		table[ds] = byMethod
	}
	var seeds []any
	for _, s := range r.Seeds {
		var pts []any
		for _, p := range s.Points {
			pts = append(pts, map[string]any{"method": p.Method, "model": p.Model, "step": p.Step,
				"losses": jfs(p.Losses), "accuracies": jfs(p.Accuracies)})
		}
		met := map[string]any{}
		for m, v := range s.Metrics {
			mv := map[string]any{}
			for k, x := range v {
				mv[k] = jf(x)
			}
			met[m] = mv
		}
		seeds = append(seeds, map[string]any{"dataset": s.Dataset, "seed": s.Seed, "elapsed_s": s.Elapsed.Seconds(),
			"metrics": met, "points": pts})
	}
	return map[string]any{"budget": r.Budget, "elapsed_s": r.Elapsed.Seconds(), "table": table, "runs": seeds}
}

func jf(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

func jfs(v []float64) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = jf(x)
	}
	return out
}
