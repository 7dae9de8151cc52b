package job

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// Explanation says what a tune run did in numbers (its fields) and in
// words (Lines, and Try for what to change): how often the run was in the
// Pareto band and whether and why PNG's control was on, why F ended higher
// than it started, and whether the criterion's target lies beyond the
// Pareto front. tune's summary, its --json and the Python result all read
// this one value.
type Explanation struct {
	// Band is the share of the last (up to) 100 steps with g ≤ e (PNG only).
	Band *BandShare `json:"band,omitempty"`
	// Control counts the steps with PNG's control on, and why (PNG only).
	Control *ControlCount `json:"control,omitempty"`
	// Bound counts the steps whose update Adam's per-weight step bound
	// held (Adam with PNG's update of its proposal); nil when it held none.
	Bound *BoundCount `json:"bound,omitempty"`
	// F is the criterion before and after on the report data, with what
	// each of its variables' changes added to it; nil when F is not
	// finite at either end.
	F *FChange `json:"F,omitempty"`
	// Front is set when the run ended on the front with F held there:
	// Front.Beyond says that the criterion's target lies beyond it.
	Front *FrontLimit `json:"front_limit,omitempty"`
	// Short is the run in one line (front's members, batch's jobs).
	Short string `json:"short"`
	// Lines say what happened, one sentence each.
	Lines []string `json:"lines"`
	// Try says what to change, one suggestion each.
	Try []string `json:"try,omitempty"`
}

// BandShare is the share of a run's last steps in the Pareto band.
type BandShare struct {
	Counts string `json:"counts"` // what a step in the band is: "g ≤ e"
	Share  Num    `json:"share"`  // fraction of Steps
	Steps  int    `json:"steps"`  // the last steps counted (at most 100)
}

// ControlCount counts the steps with PNG's control on and why it was on:
// far from the front (g > e) or an improper trade (g ≤ e, but F's own
// step would have raised the losses by more than MaxTradeoff times what
// it lowers them, or only raised them). Held counts the improper steps
// where the point held still.
type ControlCount struct {
	Steps       int `json:"steps"` // the PNG steps this process recorded
	On          int `json:"on"`
	Far         int `json:"far"`
	Improper    int `json:"improper"`
	Held        int `json:"held"`
	MaxTradeoff Num `json:"max_tradeoff,omitempty"`
	// GOverEFirst and GOverELast are g/e at the first and the last step
	// recorded: above 1 the control is on to bring g down.
	GOverEFirst Num `json:"g_over_e_first"`
	GOverELast  Num `json:"g_over_e_last"`
}

// BoundCount counts the steps whose update Adam's per-weight step bound
// held. With Adam and the control on (or F's step tested as a trade), PNG
// replaces Adam's proposal by the closest update within Adam's step bound
// that lowers every loss at PNG's rate (png.PNG.Constrain): Posed counts
// those steps, Held the ones with weights held at the bound
// (png.MetricInfo.Clipped > 0), MaxClipped the most weights at the bound
// at one step, and Inexact the steps whose bounded problem was not solved
// within its passes over the weights (png.MetricInfo.Inexact: the update
// met every loss's rate but was not the closest one).
type BoundCount struct {
	Steps      int `json:"steps"` // the steps this process recorded
	Posed      int `json:"posed"`
	Held       int `json:"held"`
	MaxClipped int `json:"max_clipped"`
	Inexact    int `json:"inexact"`
}

// FChange is the criterion before and after on the report data.
type FChange struct {
	Before Num  `json:"before"`
	After  Num  `json:"after"`
	Rose   bool `json:"rose"`
	// Parts are the criterion's variables (task losses, terms, drift), in
	// its order, with their share of F's change.
	Parts []FPart `json:"parts"`
}

// FPart is one variable of the criterion and what its change added to F.
type FPart struct {
	Name   string `json:"name"`
	Before Num    `json:"before"`
	After  Num    `json:"after"`
	// DF is what the change of this variable added to F: ∫ ∂F/∂x dx
	// along the straight line from the values before to those after; the
	// parts add up to F's change.
	DF Num `json:"dF"`
	// Target is where ∂F/∂x changes sign between the value before and the
	// value after (the others at their values after): the value F prefers
	// for this variable (r_i of wd:r1,...), passed during the run. Absent
	// when not passed.
	Target *Num `json:"target,omitempty"`
	// Cause, for a part that raised F: "past_target" (it moved past its
	// target: a loss below its wd target counts as a cost), "away" (it
	// fell where F wants it higher), "rose" (a value F wants lower rose).
	Cause string `json:"cause,omitempty"`
	// Batch is the mean value on the training batches of the first and
	// the last steps recorded (tasks only): whether the change was seen
	// in training too.
	Batch []Num `json:"batch,omitempty"`
}

// FrontLimit describes where the front stopped the run: at its end, on
// the front, Loss could not go lower without raising Against by Ratio
// times as much, and the run stopped at Closest. Beyond is set when F
// prefers a lower Loss than that (Target, where ∂F/∂Loss turns ≤ 0): the
// criterion's target lies beyond the front. Without a target (F = a sum
// or a product of the losses) F is as low as the front allows there.
type FrontLimit struct {
	Loss    string `json:"loss"`
	Against string `json:"against"`
	Ratio   Num    `json:"ratio"`
	// HeldBy is "improper_trades" (PNG refused F's step: it would raise
	// the losses by more than MaxTradeoff times what it lowers them; Ratio
	// is that step's raise over its fall, measured on the report data's
	// gradients at the end) or "front" (F's gradient is cancelled by the
	// tasks' gradients: F is as low as the front allows here; Ratio is the
	// front's exchange rate ω_Loss/ω_Against from the min-norm weights).
	HeldBy string `json:"held_by"`
	Beyond bool   `json:"beyond"`
	Target *Num   `json:"target,omitempty"`
	// Closest are the losses reached (the report data's, after), and F
	// there.
	Closest map[string]Num `json:"closest"`
	F       Num            `json:"F"`
}

// stepTrace is what explain reads of a run's steps (its first model), one
// entry a step in the order taken.
type stepTrace struct {
	G, E, F                 []float64
	Losses                  [][]float64
	Control, Improper, Held []bool
	// Posed, Clipped and Inexact are the update within the optimizer's
	// step bound (png.MetricInfo): whether it was posed, the weights held
	// at the bound, and whether its dual was solved within its passes.
	Posed, Inexact []bool
	Clipped        []int
}

// record appends one step of a model: p is its part of the step.
func (t *stepTrace) record(p finetune.Point) {
	info := p.Info
	t.G = append(t.G, info.G)
	t.E = append(t.E, info.E)
	t.F = append(t.F, p.F)
	t.Losses = append(t.Losses, append([]float64(nil), p.Losses...))
	t.Control = append(t.Control, info.ControlOn)
	t.Improper = append(t.Improper, info.Improper)
	t.Held = append(t.Held, info.Held)
	mi := p.Metric
	t.Posed = append(t.Posed, mi != nil)
	t.Clipped = append(t.Clipped, 0)
	t.Inexact = append(t.Inexact, false)
	if mi != nil {
		t.Clipped[len(t.Clipped)-1], t.Inexact[len(t.Inexact)-1] = mi.Clipped, mi.Inexact
	}
}

// from returns the trace's steps from step k (0-based) on; the losses and
// F are kept whole (explain reads their ends).
func (t stepTrace) from(k int) stepTrace {
	cut := func(b []bool) []bool {
		if len(b) < k {
			return nil
		}
		return b[k:]
	}
	out := stepTrace{G: t.G[k:], E: t.E[k:], Control: cut(t.Control), Improper: cut(t.Improper), Held: cut(t.Held),
		Posed: cut(t.Posed), Inexact: cut(t.Inexact), F: t.F, Losses: t.Losses}
	if len(t.Clipped) >= k {
		out.Clipped = t.Clipped[k:]
	}
	return out
}

// explainInput is what explain reads: the run's steps, the criterion, and
// the measurement before and after on the report data.
type explainInput struct {
	Method     string // "png" turns on the band and control parts
	Tasks      []string
	Crit       criterion.Criterion
	CritText   string    // as the user gave it
	Before     []float64 // the criterion's variables (criterion.VarsOf) before
	After      []float64 // and after, on the report data
	MeasuredOn string    // "validation" or "training"
	// Gram is K = J Jᵀ of the task gradients on the report data after
	// the run (m×m), nil when not measured.
	Gram  []float64
	Trace stepTrace
	// Skip is the number of first steps of Trace another method took
	// (--mgd-steps): left out of the band and the control counts.
	Skip int
	// Resumed is the step a resumed run started after (0: a fresh run):
	// Trace holds the steps from there on.
	Resumed     int
	Gamma       float64 // PNG's γ, resolved
	MaxTradeoff float64 // PNG's trade limit (0: none)
}

// Thresholds of explain.
const (
	// explainWindow is the number of last steps whose band share and
	// improper share say how the run ended.
	explainWindow = 100
	// explainBatch is the number of first and last steps whose batch
	// losses are averaged to tell a change on the report data from one
	// in training.
	explainBatch = 10
	// frontCancel: F's gradient counts as cancelled by the tasks'
	// gradients (F as low as the front allows) when ‖Jᵀc‖² ≤ frontCancel
	// · Σ c_i²‖∇ℓ_i‖², c = ∂F/∂ℓ: less than 5% of what it would be were the
	// tasks' gradients orthogonal.
	frontCancel = 0.05
)

// explain tells what a run did (Explanation). It never fails: a part it
// cannot measure (F not finite, no Gram) is left out.
func explain(in explainInput) *Explanation {
	ex := &Explanation{Lines: []string{}}
	tr := in.Trace
	if in.Skip > 0 && in.Skip <= len(tr.G) {
		tr = tr.from(in.Skip)
	}
	pngRun := in.Method == "png" && len(tr.G) > 0
	if pngRun {
		share, k := InBand(tr.G, tr.E, explainWindow)
		ex.Band = &BandShare{Counts: "g ≤ e", Share: share, Steps: k}
		ex.Control = countControl(tr, in.MaxTradeoff)
		ex.Lines = append(ex.Lines, bandLine(ex.Band, in.Skip), controlLine(ex.Control, in.Resumed))
	}
	if ex.Bound = countBound(tr); ex.Bound != nil {
		ex.Lines = append(ex.Lines, boundLine(ex.Bound))
	}
	ex.F = fChange(in)
	if ex.F != nil && ex.F.Rose {
		ex.explainRise(in)
	}
	if pngRun {
		if ex.Front = frontLimit(in, tr); ex.Front != nil {
			f := ex.Front
			ex.Lines = append(ex.Lines, frontLine(f, in.Tasks, in.MaxTradeoff))
			if f.Beyond {
				ex.Try = append(ex.Try, fmt.Sprintf("a target the front can reach: %s no lower than about %s while %s stays at %s",
					f.Loss, num4(float64(f.Closest[f.Loss])), f.Against, num4(float64(f.Closest[f.Against]))))
			}
			if f.Beyond || f.HeldBy == "improper_trades" {
				ex.Try = append(ex.Try, "`paretonav front` on the same model and data shows the trade-offs the front offers")
			}
		}
	}
	ex.Try = dedupe(ex.Try)
	ex.Short = ex.short()
	return ex
}

// short says the run in one line: F's change, the band share, the
// control's steps, the bound's, and what raised F or held it.
func (ex *Explanation) short() string {
	var parts []string
	if f := ex.F; f != nil {
		verb := "fell"
		if f.Rose {
			verb = "rose"
		}
		s := fmt.Sprintf("F %s %s → %s", verb, num4(float64(f.Before)), num4(float64(f.After)))
		if f.Rose {
			var why []string
			for _, p := range f.Parts {
				switch p.Cause {
				case "past_target":
					why = append(why, p.Name+" past its target")
				case "away":
					why = append(why, p.Name+" below where F wants it")
				case "rose":
					why = append(why, p.Name+" rose")
				}
			}
			if len(why) > 0 {
				s += " (" + strings.Join(why, ", ") + ")"
			}
		}
		parts = append(parts, s)
	}
	if b := ex.Band; b != nil {
		parts = append(parts, fmt.Sprintf("g ≤ e at %s of the last %d steps", percent(float64(b.Share)), b.Steps))
	}
	if c := ex.Control; c != nil {
		s := fmt.Sprintf("control on at %d of %d steps", c.On, c.Steps)
		var why []string
		if c.Far > 0 {
			why = append(why, fmt.Sprintf("%d far from the front", c.Far))
		}
		if c.Improper > 0 {
			why = append(why, fmt.Sprintf("%d improper trades", c.Improper))
		}
		if len(why) > 0 {
			s += " (" + strings.Join(why, ", ") + ")"
		}
		parts = append(parts, s)
	}
	if b := ex.Bound; b != nil && b.Held > 0 {
		parts = append(parts, fmt.Sprintf("Adam's step bound held the update at %d of %d steps", b.Held, b.Steps))
	}
	if f := ex.Front; f != nil && f.Beyond {
		parts = append(parts, fmt.Sprintf("%s's target beyond the front", f.Loss))
	}
	return strings.Join(parts, "; ")
}

// countBound counts the steps Adam's step bound held; nil when it held
// none and every bounded update was solved exactly.
func countBound(tr stepTrace) *BoundCount {
	b := &BoundCount{Steps: len(tr.G)}
	for i := range tr.Posed {
		if !tr.Posed[i] {
			continue
		}
		b.Posed++
		if tr.Clipped[i] > 0 {
			b.Held++
			b.MaxClipped = max(b.MaxClipped, tr.Clipped[i])
		}
		if tr.Inexact[i] {
			b.Inexact++
		}
	}
	if b.Held == 0 && b.Inexact == 0 {
		return nil
	}
	return b
}

func boundLine(b *BoundCount) string {
	s := fmt.Sprintf("Adam's step bound held the update at %d of %d steps (up to %d weights at the bound): "+
		"the update there is the closest to Adam's step that lowers every loss at PNG's rate with no weight moving farther than Adam can in one step",
		b.Held, b.Steps, b.MaxClipped)
	if b.Inexact > 0 {
		s += fmt.Sprintf("; at %d steps that update was not solved within the step's passes over the weights, so it lowered every loss at PNG's rate but was not the closest one", b.Inexact)
	}
	return s
}

// countControl counts the control's steps and reasons.
func countControl(tr stepTrace, maxTradeoff float64) *ControlCount {
	n := len(tr.G)
	c := &ControlCount{Steps: n, MaxTradeoff: Num(maxTradeoff),
		GOverEFirst: Num(tr.G[0] / tr.E[0]), GOverELast: Num(tr.G[n-1] / tr.E[n-1])}
	for i := range tr.G {
		if !tr.Control[i] {
			continue
		}
		c.On++
		switch {
		case tr.Held[i]:
			c.Improper++
			c.Held++
		case tr.Improper[i]:
			c.Improper++
		default:
			c.Far++
		}
	}
	return c
}

func bandLine(b *BandShare, skip int) string {
	s := fmt.Sprintf("in the Pareto band (g ≤ e) at %s of the last %d steps", percent(float64(b.Share)), b.Steps)
	if skip > 0 {
		s += fmt.Sprintf(" (after the first %d steps, which followed MGD)", skip)
	}
	return s
}

func controlLine(c *ControlCount, resumed int) string {
	since := ""
	if resumed > 0 {
		since = fmt.Sprintf(" since the run resumed after step %d", resumed)
	}
	if c.On == 0 {
		return fmt.Sprintf("the control was off at all %d steps%s: PNG descended F at every step", c.Steps, since)
	}
	s := fmt.Sprintf("the control was on at %d of %d steps%s, so PNG took steps that lower every loss there, not F's own:", c.On, c.Steps, since)
	var why []string
	if c.Far > 0 {
		why = append(why, fmt.Sprintf("%d far from the Pareto front (g > e; g/e %s at the first step, %s at the last)",
			c.Far, num3(float64(c.GOverEFirst)), num3(float64(c.GOverELast))))
	}
	if c.Improper > 0 {
		w := fmt.Sprintf("%d improper trades (g ≤ e, but F's step would have raised the losses by more than %s× what it lowers them, or only raised them)",
			c.Improper, num3(float64(c.MaxTradeoff)))
		if c.Held > 0 {
			w += fmt.Sprintf(", %d of them held still (no step lowers one loss without raising another)", c.Held)
		}
		why = append(why, w)
	}
	return s + " " + strings.Join(why, "; ")
}

// fChange measures F's change and splits it among the criterion's
// variables.
func fChange(in explainInput) *FChange {
	if in.Crit == nil || len(in.Before) == 0 || len(in.Before) != len(in.After) {
		return nil
	}
	f0, e0 := in.Crit.Eval(in.Before, nil)
	f1, e1 := in.Crit.Eval(in.After, nil)
	if e0 != nil || e1 != nil || !finite(f0) || !finite(f1) {
		return nil
	}
	names := criterion.VarsOf(in.Crit)
	fc := &FChange{Before: Num(f0), After: Num(f1), Rose: f1 > f0}
	dF := pathParts(in.Crit, in.Before, in.After)
	for i, name := range names {
		p := FPart{Name: name, Before: Num(in.Before[i]), After: Num(in.After[i]), DF: Num(dF[i])}
		if t, ok := crossing(in.Crit, in.Before, in.After, i); ok {
			tn := Num(t)
			p.Target = &tn
		}
		if i < len(in.Tasks) {
			p.Batch = batchEnds(in.Trace.Losses, i)
		}
		if dF[i] > 0 {
			switch {
			case p.Target != nil:
				p.Cause = "past_target"
			case in.After[i] < in.Before[i]:
				p.Cause = "away"
			default:
				p.Cause = "rose"
			}
		}
		fc.Parts = append(fc.Parts, p)
	}
	return fc
}

// explainRise says why F rose: which variables raised it, and what held
// the step.
func (ex *Explanation) explainRise(in explainInput) {
	f := ex.F
	var raised, lowered []string
	parts := slices.Clone(f.Parts)
	slices.SortStableFunc(parts, func(a, b FPart) int { return cmpDesc(float64(a.DF), float64(b.DF)) })
	pastTarget, away, rose := []FPart{}, []FPart{}, []FPart{}
	for _, p := range parts {
		switch {
		case p.DF > 0:
			raised = append(raised, partText(p))
			switch p.Cause {
			case "past_target":
				pastTarget = append(pastTarget, p)
			case "away":
				away = append(away, p)
			default:
				rose = append(rose, p)
			}
		case p.DF < 0:
			lowered = append(lowered, fmt.Sprintf("%s %s → %s (%s)", p.Name, num4(float64(p.Before)), num4(float64(p.After)), signed(float64(p.DF))))
		}
	}
	s := fmt.Sprintf("F rose from %s to %s on the %s data", num4(float64(f.Before)), num4(float64(f.After)), in.MeasuredOn)
	if len(raised) > 0 {
		s += ": " + strings.Join(raised, "; ")
	}
	if len(raised) > 0 && len(lowered) > 0 {
		s += "; against " + strings.Join(lowered, ", ")
	}
	ex.Lines = append(ex.Lines, s)
	c := ex.Control
	mostlyOn := c != nil && 2*c.On >= c.Steps
	if len(pastTarget)+len(away) > 0 {
		var names []string
		for _, p := range append(pastTarget, away...) {
			names = append(names, p.Name)
		}
		switch {
		case in.Method != "png":
			ex.Lines = append(ex.Lines, fmt.Sprintf("why: --method %s does not follow F's gradient", in.Method))
		case mostlyOn && c.Far >= c.Improper:
			ex.Lines = append(ex.Lines, fmt.Sprintf("why: the run was far from the Pareto front, where PNG lowers every loss (%s included) before it descends F",
				strings.Join(names, ", ")))
			ex.Try = append(ex.Try, fmt.Sprintf("more steps: PNG descends F once g ≤ e (g/e went from %s to %s here)",
				num3(float64(c.GOverEFirst)), num3(float64(c.GOverELast))),
				fmt.Sprintf("a larger --gamma (now %s): e = γ·ē, so PNG starts descending F farther from the front", num3(in.Gamma)))
		case mostlyOn:
			ex.Lines = append(ex.Lines, fmt.Sprintf("why: F's own step would have raised the losses (%s included) more than it lowers them, an improper trade, so PNG lowered every loss instead",
				strings.Join(names, ", ")))
		default:
			ex.Lines = append(ex.Lines, fmt.Sprintf("why: F's step lowers %s together with the losses F wants lower, whose gradients point the same way",
				strings.Join(names, ", ")))
		}
		for _, p := range pastTarget {
			if p.After < *p.Target && p.Before > *p.Target {
				ex.Try = append(ex.Try, fmt.Sprintf("if a lower %s is welcome, a target for it at or below %s%s", p.Name, num4(float64(p.After)), wdHint(in, p)))
			} else {
				ex.Try = append(ex.Try, fmt.Sprintf("if a higher %s is welcome, a target for it at or above %s%s", p.Name, num4(float64(p.After)), wdHint(in, p)))
			}
		}
	}
	if b := ex.Bound; b != nil && 2*b.Held >= b.Steps && b.Held > 0 {
		ex.Lines = append(ex.Lines, fmt.Sprintf("what held the step: Adam's step bound, at %d of %d steps: PNG's update met every loss's rate with the weights Adam could still move, "+
			"so it followed F less than an unbounded step would", b.Held, b.Steps))
		ex.Try = append(ex.Try, "--optimizer sgd, whose step has no per-weight bound, or more steps: Adam moves a weight at most lr·B_t at step t, and B_t grows from 1 at the first step to about 7.3 (β 0.9, 0.999)")
	}
	for _, p := range rose {
		s := fmt.Sprintf("%s rose on the %s data", p.Name, in.MeasuredOn)
		if len(p.Batch) == 2 && finite(float64(p.Batch[0])) && finite(float64(p.Batch[1])) {
			if p.Batch[1] < p.Batch[0] {
				s += fmt.Sprintf(" while it fell on the training batches (%s → %s): the %s data disagree with the batches trained on",
					num4(float64(p.Batch[0])), num4(float64(p.Batch[1])), in.MeasuredOn)
				ex.Try = append(ex.Try, "fewer steps or a lower --lr; --val with --val-every K shows where validation F turns")
			} else {
				s += fmt.Sprintf(" and on the training batches too (%s → %s): the steps overshoot", num4(float64(p.Batch[0])), num4(float64(p.Batch[1])))
				ex.Try = append(ex.Try, "a lower --lr")
			}
		}
		ex.Lines = append(ex.Lines, s)
	}
}

// partText says what one variable's change did to F.
func partText(p FPart) string {
	dir := "fell"
	if p.After > p.Before {
		dir = "rose"
	}
	s := fmt.Sprintf("%s %s %s → %s (%s)", p.Name, dir, num4(float64(p.Before)), num4(float64(p.After)), signed(float64(p.DF)))
	switch p.Cause {
	case "past_target":
		side := "below"
		if p.After > p.Before {
			side = "above"
		}
		s += fmt.Sprintf(", %s its target %s, which F counts as a cost", side, num4(float64(*p.Target)))
	case "away":
		s += ", below where F wants it, which F counts as a cost"
	}
	return s
}

// wdPreset matches a criterion that is one wd preset and nothing else.
var wdPreset = regexp.MustCompile(`^\s*wd:\s*([^\s+*/()]+)\s*$`)

// wdHint returns the criterion with p's target moved to p's value after,
// when the criterion is one wd preset; else "".
func wdHint(in explainInput, p FPart) string {
	m := wdPreset.FindStringSubmatch(in.CritText)
	if m == nil {
		return ""
	}
	refs := strings.Split(m[1], ",")
	i := slices.Index(in.Tasks, p.Name)
	if i < 0 || len(refs) != len(in.Tasks) {
		return ""
	}
	refs[i] = strconv.FormatFloat(float64(p.After), 'g', 4, 64)
	return fmt.Sprintf(" (--criterion wd:%s)", strings.Join(refs, ","))
}

// frontLimit detects a run held by the front at its end: the last steps
// were in the band, and F's step was refused as an improper trade, or F's
// gradient is cancelled by the tasks' gradients while F still wants every
// loss lower.
func frontLimit(in explainInput, tr stepTrace) *FrontLimit {
	m := len(in.Tasks)
	if m < 2 || len(in.Gram) != m*m || in.Crit == nil || len(in.After) < m {
		return nil
	}
	share, k := InBand(tr.G, tr.E, explainWindow)
	if k == 0 || 2*float64(share) < 1 {
		return nil
	}
	improper := 0
	for _, b := range tr.Improper[len(tr.Improper)-k:] {
		if b {
			improper++
		}
	}
	grad := make([]float64, len(in.After))
	F, err := in.Crit.Eval(in.After, grad)
	if err != nil || !finite(F) {
		return nil
	}
	c, K := grad[:m], in.Gram
	q := make([]float64, m) // each loss's rate along −∇F's task part: q = K·c
	for i := range q {
		for j := range c {
			q[i] += K[i*m+j] * c[j]
		}
	}
	closest := map[string]Num{}
	for i, t := range in.Tasks {
		closest[t] = Num(in.After[i])
	}
	f := &FrontLimit{Closest: closest, F: Num(F)}
	var i, j int
	if 2*improper >= k {
		i, j = argmax(q), argmin(q)
		if !(q[i] > 0 && q[j] < 0) {
			return nil // F asks to raise (or lower) every loss: no trade was refused
		}
		var up, down float64
		for _, x := range q {
			if x < 0 {
				up -= x
			} else {
				down += x
			}
		}
		f.Ratio, f.HeldBy = Num(up/down), "improper_trades"
	} else {
		var cKc, diag float64
		for t := range c {
			if !(c[t] > 0) {
				return nil // F is content with some loss where it is, or wants it higher
			}
			cKc += c[t] * q[t]
			diag += c[t] * c[t] * K[t*m+t]
		}
		if !(diag > 0) || cKc > frontCancel*diag {
			return nil
		}
		omega, _ := png.MinNorm(K, m)
		// The loss F presses hardest (its rate under ∂F/∂ℓ alone), paid
		// for by the loss with the most weight in the front's normal.
		for t := range c {
			if c[t]*math.Sqrt(K[t*m+t]) > c[i]*math.Sqrt(K[i*m+i]) {
				i = t
			}
		}
		j = -1
		for t := range omega {
			if t != i && (j < 0 || omega[t] > omega[j]) {
				j = t
			}
		}
		if !(omega[j] > 0) {
			return nil
		}
		f.Ratio, f.HeldBy = Num(omega[i]/omega[j]), "front"
	}
	f.Loss, f.Against = in.Tasks[i], in.Tasks[j]
	if t, ok := targetBelow(in.Crit, in.After, i); ok {
		tn := Num(t)
		f.Beyond, f.Target = true, &tn
	}
	return f
}

func frontLine(f *FrontLimit, tasks []string, maxTradeoff float64) string {
	var pts []string
	for _, t := range tasks {
		pts = append(pts, fmt.Sprintf("%s %s", t, num4(float64(f.Closest[t]))))
	}
	var s string
	switch {
	case f.Beyond:
		s = fmt.Sprintf("the target is beyond the Pareto front: %s's target %s is out of reach, ", f.Loss, num4(float64(*f.Target)))
	case f.HeldBy == "front":
		s = "F is as low as the Pareto front allows here: "
	default:
		s = "the Pareto front held the run: "
	}
	s += fmt.Sprintf("%s cannot go lower without raising %s by %s× as much", f.Loss, f.Against, num3(float64(f.Ratio)))
	if f.HeldBy == "improper_trades" {
		s += fmt.Sprintf(" (PNG trades at most %s×)", num3(maxTradeoff))
	}
	reached := "the point reached"
	if f.Beyond {
		reached = "the closest point reached"
	}
	return s + fmt.Sprintf("; %s: %s, F %s", reached, strings.Join(pts, ", "), num4(float64(f.F)))
}

// targetBelow finds the largest value of x_i below x[i], down to 0, where
// ∂F/∂x_i turns ≤ 0 (the others held): the value F prefers for x_i when F
// wants it lower at x. A criterion increasing in x_i all the way to 0
// (a sum or a product of positive losses) has none.
func targetBelow(crit criterion.Criterion, x []float64, i int) (float64, bool) {
	const samples = 256
	if !(x[i] > 0) {
		return 0, false
	}
	hi := x[i]
	y := slices.Clone(x)
	if partial(crit, y, i) <= 0 {
		return 0, false
	}
	for k := samples - 1; k >= 0; k-- {
		lo := x[i] * float64(k) / samples
		y[i] = lo
		if d := partial(crit, y, i); !finite(d) {
			return 0, false
		} else if d <= 0 {
			b := slices.Clone(x)
			b[i] = lo
			if t, ok := crossing(crit, b, withValue(x, i, hi), i); ok {
				return t, true
			}
			return lo, true
		}
		hi = lo
	}
	return 0, false
}

// withValue returns a copy of x with x_i set to v.
func withValue(x []float64, i int, v float64) []float64 {
	y := slices.Clone(x)
	y[i] = v
	return y
}

// pathParts splits F(b) − F(a) among the variables: part i is
// ∫₀¹ ∂F/∂x_i(a + s(b−a))·(b_i − a_i) ds by the midpoint rule on 256
// pieces (exact for quadratics such as wd; the criterion may have kinks).
func pathParts(crit criterion.Criterion, a, b []float64) []float64 {
	const pieces = 256
	n := len(a)
	parts := make([]float64, n)
	x, g := make([]float64, n), make([]float64, n)
	for k := 0; k < pieces; k++ {
		s := (float64(k) + 0.5) / pieces
		for i := range x {
			x[i] = a[i] + s*(b[i]-a[i])
		}
		if _, err := crit.Eval(x, g); err != nil {
			return make([]float64, n) // outside the criterion's domain on the way: no split
		}
		for i := range parts {
			parts[i] += g[i] * (b[i] - a[i]) / pieces
		}
	}
	return parts
}

// partial returns ∂F/∂x_i at x (NaN outside the criterion's domain).
func partial(crit criterion.Criterion, x []float64, i int) float64 {
	g := make([]float64, len(x))
	if _, err := crit.Eval(x, g); err != nil {
		return math.NaN()
	}
	return g[i]
}

// crossing finds where ∂F/∂x_i changes sign as x_i moves from before[i]
// to after[i], the other variables at their values after: the value of
// x_i F prefers (its target), passed during the run.
func crossing(crit criterion.Criterion, before, after []float64, i int) (float64, bool) {
	x := slices.Clone(after)
	at := func(v float64) float64 {
		x[i] = v
		return partial(crit, x, i)
	}
	lo, hi := before[i], after[i]
	glo, ghi := at(lo), at(hi)
	if !finite(glo) || !finite(ghi) || glo == 0 || ghi == 0 || (glo > 0) == (ghi > 0) {
		return 0, false
	}
	for k := 0; k < 60; k++ {
		mid := (lo + hi) / 2
		if gm := at(mid); (gm > 0) == (glo > 0) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2, true
}

// batchEnds returns the mean of task i's batch loss over the first and
// the last explainBatch steps, or nil without steps.
func batchEnds(losses [][]float64, i int) []Num {
	n := len(losses)
	if n == 0 {
		return nil
	}
	k := min(explainBatch, n)
	mean := func(rows [][]float64) float64 {
		s := 0.0
		for _, r := range rows {
			s += r[i]
		}
		return s / float64(len(rows))
	}
	return []Num{Num(mean(losses[:k])), Num(mean(losses[n-k:]))}
}

func argmax(v []float64) int {
	k := 0
	for i := range v {
		if v[i] > v[k] {
			k = i
		}
	}
	return k
}

func argmin(v []float64) int {
	k := 0
	for i := range v {
		if v[i] < v[k] {
			k = i
		}
	}
	return k
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func num4(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
func num3(x float64) string {
	if math.IsInf(x, 1) {
		return "∞"
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}
func signed(x float64) string {
	if x >= 0 {
		return "+" + num4(x)
	}
	return "−" + num4(-x)
}
func percent(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }
