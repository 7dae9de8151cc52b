package bench

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/paretonav/paretonav/finetune"
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
	if r.DataLayout != "" {
		fmt.Fprintf(&sb, "\nDatasets built with layout %s (`paretonav data --layout %s`).\n", r.DataLayout, r.DataLayout)
	}
	if r.ThresholdCap > 0 {
		fmt.Fprintf(&sb, "\nPNG's threshold is capped (not the paper's method): e = γ·min(ē, ρ·ē_W) with ρ = %g, ē_W its average after the warm-up.\n", r.ThresholdCap)
	}
	if r.MaxTradeoff > 0 {
		fmt.Fprintf(&sb, "\nPNG's free steps are limited to proper trades (not the paper's method): a criterion step that raises the losses by more than %g times what it lowers them turns the control on.\n", r.MaxTradeoff)
	}
	if r.PaperUpdate {
		fmt.Fprintf(&sb, "\nPNG hands its direction to Adam as the gradient (the paper's update), without posing its constraint on Adam's update.\n")
	}
	if r.EnergyScale != "" {
		fmt.Fprintf(&sb, "\nThe energy's gradients reach the models scaled %s.\n", map[string]string{
			finetune.MultiShared: "together (all divided by the largest length)", finetune.MultiPerModel: "each to unit length",
			finetune.MultiRaw: "not at all (raw)"}[r.EnergyScale])
	}
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
				sb.WriteString(cellText(cells[m]))
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
					sb.WriteString(tText(c.VsPNG, b.Seeds))
				} else {
					sb.WriteString(" – |")
				}
			}
			sb.WriteString("\n")
		}
		writeTraces(&sb, r, ds)
	}
	writeAblation(&sb, r)
	writeFailures(&sb, r)
	_, err := io.WriteString(w, sb.String())
	return err
}

// writeTraces writes the phase-2 dynamics of ds's methods, mean over
// seeds: g(θ) and g/ē at every checkpoint, the share of steps with the
// control on and the mean first-order change of each loss per step.
func writeTraces(sb *strings.Builder, r *Results, ds string) {
	tr := meanTraces(r, ds)
	if len(tr) == 0 {
		return
	}
	fmt.Fprintf(sb, "\nPhase-2 dynamics (mean over seeds and models; per checkpoint stretch, in order; "+
		"ē: PNG's average of (1/m)Σ‖∇ℓ_i‖², the control is on while g/ē > γ; descent: ∇ℓ_iᵀΔθ per step):\n\n"+
		"| method | g(θ) | g/ē | control on | descent per step | training loss, last stretch |\n|---|---|---|---|---|---|\n")
	for _, m := range append(append([]string(nil), Methods...), ablationNames()[1:]...) {
		ts := tr[m]
		if len(ts) == 0 {
			continue
		}
		var g, ratio []string
		var on float64
		desc := make([]float64, len(ts[0].Descent))
		for _, t := range ts {
			g = append(g, num(t.G))
			ratio = append(ratio, num(t.GOverEBar))
			on += t.ControlOn / float64(len(ts))
			for i, d := range t.Descent {
				desc[i] += d / float64(len(ts))
			}
		}
		ratios := strings.Join(ratio, ", ")
		if ts[0].EBar == 0 {
			ratios = "–"
		}
		last := ts[len(ts)-1].TrainLoss
		fmt.Fprintf(sb, "| %s | %s | %s | %s | %s | %s |\n", m, strings.Join(g, ", "), ratios, num(on), nums(desc), nums(last))
	}
}

// meanTraces averages ds's traces over seeds: method → one Trace per
// checkpoint.
func meanTraces(r *Results, ds string) map[string][]Trace {
	sums := map[string][]Trace{}
	count := map[string]int{}
	for _, sr := range r.Seeds {
		if sr.Dataset != ds {
			continue
		}
		byMethod := map[string][]Trace{}
		for _, t := range sr.Trace {
			byMethod[t.Method] = append(byMethod[t.Method], t)
		}
		for m, ts := range byMethod {
			if sums[m] == nil {
				sums[m] = make([]Trace, len(ts))
				for i, t := range ts {
					sums[m][i] = Trace{Method: m, Step: t.Step, TrainLoss: make([]float64, len(t.TrainLoss)), Descent: make([]float64, len(t.Descent))}
				}
			}
			if len(ts) != len(sums[m]) {
				continue
			}
			count[m]++
			for i, t := range ts {
				s := &sums[m][i]
				s.Steps += t.Steps
				s.G += t.G
				s.EBar += t.EBar
				s.GOverEBar += t.GOverEBar
				s.ControlOn += t.ControlOn
				for k := range s.TrainLoss {
					s.TrainLoss[k] += t.TrainLoss[k]
				}
				for k := range s.Descent {
					s.Descent[k] += t.Descent[k]
				}
			}
		}
	}
	for m, ts := range sums {
		n := float64(count[m])
		for i := range ts {
			s := &ts[i]
			s.G, s.EBar, s.GOverEBar, s.ControlOn = s.G/n, s.EBar/n, s.GOverEBar/n, s.ControlOn/n
			for k := range s.TrainLoss {
				s.TrainLoss[k] /= n
			}
			for k := range s.Descent {
				s.Descent[k] /= n
			}
		}
	}
	return sums
}

// writeAblation writes the ablation table (the paper's appendix table,
// its rows in AblationRows order) with the paired t-tests of the default
// png against each variant.
func writeAblation(sb *strings.Builder, r *Results) {
	dss := make([]string, 0, len(r.AblationTable))
	for ds := range r.AblationTable {
		dss = append(dss, ds)
	}
	sort.Strings(dss)
	for _, ds := range dss {
		tab := r.AblationTable[ds]
		fmt.Fprintf(sb, "\n## Ablation: PNG's α and γ on %s\n\n"+
			"The paper's appendix table: α at γ = 0.1, then γ at α = 0.5; every variant from the same phase-1 models as the main table "+
			"(α=0.5, γ=0.1 is its png). IGD+ against the union of the main methods' and every variant's checkpoints, "+
			"so it differs from the main table's.\n\n| setting |", ds)
		metricHeader(sb)
		for _, v := range AblationRows {
			cells := tab[v.Name()]
			if cells == nil {
				continue
			}
			fmt.Fprintf(sb, "| %s |", v.Label())
			for _, m := range Metrics {
				sb.WriteString(cellText(cells[m]))
			}
			sb.WriteString("\n")
		}
		fmt.Fprintf(sb, "\nPaired t-test, α=0.5, γ=0.1 vs each variant (t on default − variant, two-sided p):\n\n| variant |")
		metricHeader(sb)
		for _, v := range AblationVariants() {
			cells := tab[v.Name()]
			if cells == nil {
				continue
			}
			fmt.Fprintf(sb, "| %s |", v.Label())
			for _, m := range Metrics {
				if c := cells[m]; c != nil && c.VsPNG != nil {
					sb.WriteString(tText(c.VsPNG, r.Budget.Seeds))
				} else {
					sb.WriteString(" – |")
				}
			}
			sb.WriteString("\n")
		}
	}
}

// cellText is a table cell: mean ± std over the seeds with a value,
// followed by "(n of N seeds)" when failed runs left some out, "–" for
// none.
func cellText(c *Cell) string {
	switch {
	case c == nil || c.N == 0:
		return " – |"
	case c.N < len(c.Values):
		return fmt.Sprintf(" %s ± %s (%d of %d seeds) |", num(c.Mean), num(c.Std), c.N, len(c.Values))
	}
	return fmt.Sprintf(" %s ± %s |", num(c.Mean), num(c.Std))
}

// tText is a t-test's cell: t and p, and the number of pairs when failed
// runs left some of the seeds out.
func tText(t *TTest, seeds int) string {
	if t.N < seeds {
		return fmt.Sprintf(" t=%s, p=%s (%d seeds) |", num(t.T), num(t.P), t.N)
	}
	return fmt.Sprintf(" t=%s, p=%s |", num(t.T), num(t.P))
}

// writeFailures lists the runs that failed numerically (their points are
// left out, their metrics missing), nothing when none did.
func writeFailures(sb *strings.Builder, r *Results) {
	var rows []string
	for _, s := range r.Seeds {
		for _, f := range s.Failures {
			rows = append(rows, fmt.Sprintf("| %s | %d | %s | %s |\n", s.Dataset, s.Seed, f.Method, strings.ReplaceAll(f.Error, "|", "\\|")))
		}
	}
	if len(rows) == 0 {
		return
	}
	sb.WriteString("\n## Failed runs\n\nThese runs failed numerically (a model diverged or went non-finite); their points are left out, " +
		"their metrics are missing (means over the other seeds, t-tests over the seeds where both runs exist):\n\n" +
		"| dataset | seed | method | error |\n|---|---|---|---|\n")
	for _, row := range rows {
		sb.WriteString(row)
	}
}

func nums(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = num(x)
	}
	return "(" + strings.Join(s, ", ") + ")"
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
	var seeds []any
	for _, s := range r.Seeds {
		var pts []any
		for _, p := range s.Points {
			pts = append(pts, map[string]any{"method": p.Method, "model": p.Model, "step": p.Step,
				"losses": jfs(p.Losses), "accuracies": jfs(p.Accuracies)})
		}
		run := map[string]any{"dataset": s.Dataset, "seed": s.Seed, "elapsed_s": s.Elapsed.Seconds(),
			"metrics": metricsJSON(s.Metrics), "points": pts}
		if s.Ablation != nil {
			run["ablation"] = metricsJSON(s.Ablation)
		}
		if len(s.Failures) > 0 {
			run["failures"] = s.Failures
		}
		if len(s.Trace) > 0 {
			var ts []any
			for _, t := range s.Trace {
				ts = append(ts, map[string]any{"method": t.Method, "step": t.Step, "steps": t.Steps, "g": jf(t.G),
					"ebar": jf(t.EBar), "g_over_ebar": jf(t.GOverEBar), "control_on": jf(t.ControlOn),
					"train_loss": jfs(t.TrainLoss), "descent": jfs(t.Descent)})
			}
			run["trace"] = ts
		}
		seeds = append(seeds, run)
	}
	out := map[string]any{"budget": r.Budget, "config": map[string]any{"png_threshold_cap": r.ThresholdCap, "data_layout": r.DataLayout,
		"png_max_tradeoff": r.MaxTradeoff, "energy_scale": r.EnergyScale, "png_paper_update": r.PaperUpdate},
		"elapsed_s": r.Elapsed.Seconds(), "table": tableJSON(r.Table), "runs": seeds}
	if len(r.AblationTable) > 0 {
		out["ablation_table"] = tableJSON(r.AblationTable)
	}
	return out
}

func metricsJSON(ms map[string]map[string]float64) map[string]any {
	met := map[string]any{}
	for m, v := range ms {
		mv := map[string]any{}
		for k, x := range v {
			mv[k] = jf(x)
		}
		met[m] = mv
	}
	return met
}

// tableJSON returns a table (dataset → method → metric → cell) as JSON.
func tableJSON(t map[string]map[string]map[string]*Cell) map[string]any {
	table := map[string]any{}
	for ds := range t {
		byMethod := map[string]any{}
		for method, byMetric := range t[ds] {
			mm := map[string]any{}
			for metric, c := range byMetric {
				cell := map[string]any{"mean": jf(c.Mean), "std": jf(c.Std), "n": c.N, "values": jfs(c.Values), "seeds": c.Seeds}
				if c.VsPNG != nil {
					cell["png_vs"] = map[string]any{"t": jf(c.VsPNG.T), "p": jf(c.VsPNG.P), "df": c.VsPNG.DF}
				}
				mm[metric] = cell
			}
			byMethod[method] = mm
		}
		table[ds] = byMethod
	}
	return table
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
