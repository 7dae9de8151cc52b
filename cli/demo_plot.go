package cli

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/png/criterion"
)

// demoTrace is the demo's Recorder: every step's batch F, g, e and
// control, and at the loop's validation steps (Settings.ValEvery) the
// validation losses, their F and the argmax accuracies of both tasks.
// The accuracies are measured on md, which holds the step's updated
// parameters when Record is called.
type demoTrace struct {
	md    *backend.Model
	tasks []backend.Task
	val   *finetune.Dataset
	batch int
	crit  criterion.Criterion

	stepTrace
	// Validation records, the pretrained model first (step 0).
	vStep []float64
	vLoss [][]float64
	vF    []float64
	vAcc  [][]float64
}

func (d *demoTrace) Init(*finetune.Config) error { return nil }

func (d *demoTrace) Record(st *finetune.Step) error {
	d.add(st)
	p := st.Points[0]
	if p.ValLosses != nil {
		return d.validation(st.Step, p.ValLosses)
	}
	return nil
}

func (d *demoTrace) Done(*finetune.Result) error { return nil }

// bracket puts the pretrained model's validation record (step 0) first
// and the tuned model's (step last) at the end when the loop did not
// validate at its last step.
func (d *demoTrace) bracket(before, accBefore []float64, last float64, after, accAfter []float64) {
	F0, err := d.crit.Eval(before, nil)
	if err != nil {
		F0 = math.NaN()
	}
	d.vStep = append([]float64{0}, d.vStep...)
	d.vLoss = append([][]float64{before}, d.vLoss...)
	d.vF = append([]float64{F0}, d.vF...)
	d.vAcc = append([][]float64{accBefore}, d.vAcc...)
	if d.vStep[len(d.vStep)-1] == last {
		return
	}
	F1, err := d.crit.Eval(after, nil)
	if err != nil {
		F1 = math.NaN()
	}
	d.vStep = append(d.vStep, last)
	d.vLoss = append(d.vLoss, after)
	d.vF = append(d.vF, F1)
	d.vAcc = append(d.vAcc, accAfter)
}

// validation adds a validation record: losses as measured by the loop,
// F from them, accuracies from md's current parameters.
func (d *demoTrace) validation(step int, losses []float64) error {
	F, err := d.crit.Eval(losses, nil)
	if err != nil {
		F = math.NaN()
	}
	acc, err := demoAccuracy(d.md, d.tasks, d.val, d.batch)
	if err != nil {
		return err
	}
	d.vStep = append(d.vStep, float64(step))
	d.vLoss = append(d.vLoss, append([]float64(nil), losses...))
	d.vF = append(d.vF, F)
	d.vAcc = append(d.vAcc, acc)
	return nil
}

// demoAccuracy returns, for each classification task, the fraction of
// data whose label is the argmax of the task's output row (the first
// largest), evaluated batch examples at a time through md.Outputs.
func demoAccuracy(md *backend.Model, tasks []backend.Task, data *finetune.Dataset, batch int) ([]float64, error) {
	outs := make([]string, len(tasks))
	for i, t := range tasks {
		outs[i] = t.Output
	}
	hits := make([]int, len(tasks))
	n := data.Len()
	for i := 0; i < n; i += batch {
		j := min(i+batch, n)
		b := data.Slice(i, j)
		vals, err := md.Outputs(b, outs...)
		if err != nil {
			return nil, fmt.Errorf("demo: accuracy, examples %d..%d: %w", i, j-1, err)
		}
		for k, t := range tasks {
			o, y := vals[t.Output], b[t.Target]
			if o == nil || y == nil || len(o.Shape) != 2 || o.Shape[0] != j-i {
				return nil, fmt.Errorf("demo: accuracy of %q: output or labels missing or not [N, classes]", t.Name)
			}
			C, v, lab := o.Shape[1], o.Float64s(), y.Float64s()
			for r := 0; r < j-i; r++ {
				best := 0
				for c := 1; c < C; c++ {
					if v[r*C+c] > v[r*C+best] {
						best = c
					}
				}
				if float64(best) == lab[r] {
					hits[k]++
				}
			}
		}
	}
	acc := make([]float64, len(tasks))
	for k := range acc {
		acc[k] = float64(hits[k]) / float64(n)
	}
	return acc, nil
}

// Colours of the demo plot.
var (
	demoBlue   = trajectoryColors[0]
	demoRed    = trajectoryColors[1]
	demoGreen  = trajectoryColors[2]
	demoOrange = trajectoryColors[3]
	demoFaint  = color.Gray{Y: 0xc8}
)

// plotDemo draws the demo's four panels to a PNG at path: (a) F on the
// validation pairs and, faintly, on the batches; (b) g(θ) and e = γ·ē on
// a log scale with the steps inside the Pareto band shaded; (c) the
// validation losses in loss space from the pretrained to the tuned model,
// with the criterion's target r and iso-F ellipses of wd; (d) the
// validation accuracies of both tasks. Legends sit in head room kept
// free above the data.
func plotDemo(path, title string, tasks []string, r []float64, gamma float64, d *demoTrace) error {
	if len(d.step) == 0 || len(d.vStep) < 2 {
		return fmt.Errorf("demo plot: too few records (%d steps, %d validations)", len(d.step), len(d.vStep))
	}
	last := d.step[len(d.step)-1]
	headroom := func(p *plot.Plot, lo, hi float64, frac float64) {
		if isLog(p) {
			p.Y.Min, p.Y.Max = lo, hi*math.Pow(hi/lo, frac)
		} else {
			p.Y.Min, p.Y.Max = lo, hi+(hi-lo)*frac
		}
		p.Legend.Top, p.Legend.Left = true, false
	}
	newPanel := func(t, x, y string) *plot.Plot {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = t, x, y
		p.X.Min, p.X.Max = 0, last
		p.Legend.TextStyle.Font.Size = vg.Points(9)
		p.Title.TextStyle.Font.Size = vg.Points(11)
		return p
	}

	// (a) F.
	pa := newPanel("(a) criterion F", "PNG step", "F (log scale)")
	pa.Y.Scale, pa.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: 2}
	if err := addLine(pa, d.step, d.F, demoFaint, vg.Points(0.7), "on each training batch", false); err != nil {
		return err
	}
	if err := addLine(pa, d.vStep, d.vF, demoBlue, vg.Points(1.6), fmt.Sprintf("on the validation pairs (every %g steps)", d.vStep[1]-d.vStep[0]), true); err != nil {
		return err
	}
	lo, hi := positiveRange(d.F, d.vF)
	vlo, _ := positiveRange(d.vF)
	headroom(pa, max(lo, vlo/20), hi, 0.35)

	// (b) g and e with the band shaded.
	pb := newPanel(fmt.Sprintf("(b) g(θ) and threshold e = γ·ē (γ = %g)", gamma), "PNG step", "log scale")
	pb.Y.Scale, pb.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: 1}
	lo, hi = positiveRange(d.G, d.E)
	headroom(pb, lo/1.5, hi, 0.45)
	// The band is a strip along the bottom of the panel: one green bar
	// per run of steps with the control off.
	band, err := bandStrip(pb, d.step, d.G, d.E, demoGreen)
	if err != nil {
		return fmt.Errorf("demo plot: %w", err)
	}
	if err := addLine(pb, d.step, d.G, demoRed, vg.Points(0.8), "g(θ) on the batch", false); err != nil {
		return err
	}
	if err := addLine(pb, d.step, d.E, demoGreen, vg.Points(1.6), "e = γ·ē", false); err != nil {
		return err
	}
	if band != nil {
		pb.Legend.Add("steps in the Pareto band (g ≤ e)", band)
	}

	// (c) loss space.
	pc := plot.New()
	pc.Title.Text = "(c) validation losses: pretrained → tuned"
	pc.Title.TextStyle.Font.Size = vg.Points(11)
	pc.Legend.TextStyle.Font.Size = vg.Points(9)
	pc.X.Label.Text, pc.Y.Label.Text = "loss "+tasks[0], "loss "+tasks[1]
	tr := make([][2]float64, len(d.vLoss))
	xlo, xhi, ylo, yhi := r[0], r[0], r[1], r[1]
	for i, l := range d.vLoss {
		tr[i] = [2]float64{l[0], l[1]}
		xlo, xhi, ylo, yhi = min(xlo, l[0]), max(xhi, l[0]), min(ylo, l[1]), max(yhi, l[1])
	}
	mx, my := 0.12*(xhi-xlo), 0.12*(yhi-ylo)
	pc.X.Min, pc.X.Max, pc.Y.Min, pc.Y.Max = xlo-mx, xhi+mx, ylo-my, yhi+my+0.35*(yhi-ylo)
	for k, f := range isoLevels(d.vF[0]) {
		ell := make(plotter.XYs, 121)
		for i := range ell {
			a := 2 * math.Pi * float64(i) / 120
			ell[i] = plotter.XY{X: r[0] + math.Sqrt(f*r[0])*math.Cos(a), Y: r[1] + math.Sqrt(f*r[1])*math.Sin(a)}
		}
		l, err := plotter.NewLine(ell)
		if err != nil {
			return fmt.Errorf("demo plot: contour: %w", err)
		}
		l.Color, l.Width, l.Dashes = color.Gray{Y: 0xa0}, vg.Points(0.7), []vg.Length{vg.Points(3), vg.Points(2)}
		pc.Add(l)
		if k == 0 {
			pc.Legend.Add("F = F(pretrained), ¼ and 1/16 of it", l)
		}
	}
	l, s, err := plotter.NewLinePoints(xys(tr))
	if err != nil {
		return fmt.Errorf("demo plot: trajectory: %w", err)
	}
	l.Color, l.Width = demoBlue, vg.Points(1)
	s.GlyphStyle = draw.GlyphStyle{Color: demoBlue, Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
	pc.Add(l, s)
	pc.Legend.Add(fmt.Sprintf("every %g steps", d.vStep[1]-d.vStep[0]), l)
	for _, m := range []struct {
		at    [2]float64
		c     color.Color
		shape draw.GlyphDrawer
		label string
	}{
		{tr[0], demoOrange, draw.CircleGlyph{}, "pretrained"},
		{tr[len(tr)-1], demoRed, draw.CircleGlyph{}, "tuned"},
		{[2]float64{r[0], r[1]}, color.Black, draw.CrossGlyph{}, "target r"},
	} {
		sc, err := plotter.NewScatter(xys([][2]float64{m.at}))
		if err != nil {
			return fmt.Errorf("demo plot: %s: %w", m.label, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: m.c, Radius: vg.Points(4), Shape: m.shape}
		pc.Add(sc)
		pc.Legend.Add(m.label, sc)
	}
	pc.Legend.Top, pc.Legend.Left = true, false

	// (d) accuracies.
	pd := newPanel("(d) validation accuracy", "PNG step", "accuracy (%)")
	alo, ahi := 100.0, 0.0
	for k, c := range []color.Color{demoBlue, demoOrange} {
		y := make([]float64, len(d.vAcc))
		for i, a := range d.vAcc {
			y[i] = 100 * a[k]
			alo, ahi = min(alo, y[i]), max(ahi, y[i])
		}
		if err := addLine(pd, d.vStep, y, c, vg.Points(1.4), "task "+tasks[k], true); err != nil {
			return err
		}
	}
	margin := max(0.5, 0.1*(ahi-alo))
	headroom(pd, alo-margin, min(ahi+margin, 100), 0.3)

	rows := [][]*plot.Plot{{pa, pb}, {pc, pd}}
	const cell = 4.6 * vg.Inch
	img := vgimg.New(2*cell, 2*cell+vg.Millimeter*6)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Millimeter * 8, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 16, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(rows, tiles, dc)
	for i := range rows {
		for j, p := range rows[i] {
			p.Draw(canvases[i][j])
		}
	}
	ts := pa.Title.TextStyle
	ts.XAlign, ts.Font.Size = draw.XCenter, vg.Points(12)
	dc.FillText(ts, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Millimeter*7}, title)
	return savePNG(img, path, "demo plot")
}

// isoLevels returns the F values of the iso-F contours drawn around r:
// the pretrained F and successive quarters of it.
func isoLevels(f0 float64) []float64 {
	if !(f0 > 0) || math.IsInf(f0, 0) {
		return nil
	}
	return []float64{f0, f0 / 4, f0 / 16}
}
