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

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/png/criterion"
)

// stepTrace keeps every step's number, batch F, g and e (of the first
// model), for the plots of tune and demo.
type stepTrace struct {
	step    []float64
	F, G, E []float64
}

// add records st.
func (t *stepTrace) add(st *finetune.Step) {
	p := st.Points[0]
	t.step = append(t.step, float64(st.Step))
	t.F = append(t.F, st.F)
	t.G = append(t.G, p.Info.G)
	t.E = append(t.E, p.Info.E)
}

// series is a Recorder keeping what tune's plot and band fraction need:
// every step's batch F, g, e and batch losses, and the
// validation losses of the steps at which the loop validated.
type series struct {
	stepTrace
	losses [][]float64
	terms  [][]float64 // the --term values on each batch (none without terms)
	drift  []float64   // ‖θ − θ₀‖² at each step, when the criterion reads drift
	vStep  []float64
	vLoss  [][]float64

	termNames []string
	hasDrift  bool
}

// Init implements finetune.Recorder.
func (s *series) Init(cfg *finetune.Config) error {
	s.termNames, s.hasDrift = cfg.Terms, cfg.Drift
	return nil
}

// Record implements finetune.Recorder.
func (s *series) Record(st *finetune.Step) error {
	s.add(st)
	p := st.Points[0]
	s.losses = append(s.losses, append([]float64(nil), p.Losses...))
	if len(s.termNames) > 0 {
		s.terms = append(s.terms, append([]float64(nil), p.Terms...))
	}
	if s.hasDrift {
		s.drift = append(s.drift, p.Drift)
	}
	if p.ValLosses != nil {
		s.vStep = append(s.vStep, float64(st.Step))
		s.vLoss = append(s.vLoss, append([]float64(nil), p.ValLosses...))
	}
	return nil
}

// Done implements finetune.Recorder.
func (s *series) Done(*finetune.Result) error { return nil }

// tunePlot is what tune's --plot draws.
type tunePlot struct {
	Title  string
	Tasks  []string
	Series *series
	// Crit evaluates F of validation losses and the iso-F contours; nil
	// draws neither.
	Crit criterion.Criterion
	// Before and After are the task losses measured on the report set
	// (MeasuredOn: "validation" or "training", Examples examples) before
	// and after training.
	Before, After []float64
	MeasuredOn    string
	Examples      int
}

// Colours of tune's plot.
var (
	plotBlue   = trajectoryColors[0]
	plotRed    = trajectoryColors[1]
	plotGreen  = trajectoryColors[2]
	plotOrange = trajectoryColors[3]
	plotFaint  = color.Gray{Y: 0xc8}
)

// plotTune draws tune's run to a PNG at path: (a) F on the batches with
// its moving average, and on the validation data when the loop validated
// along the way; (b) g(θ) and e = γ·ē (log scale) with the steps in the
// Pareto band marked along the bottom; (c) each task's loss over the
// steps; and for 2 or 3 tasks the loss-space trajectory in each pair of
// tasks: the validation losses from before to after training when --val
// was measured more than at the end, else the batch losses under a long
// moving average (the panel says how long). For two tasks, iso-F contours
// through the trajectory's start and end are drawn. Legends sit in head
// room kept free above the data; tick labels carry the digits that tell
// neighbouring ticks apart.
func plotTune(path string, t *tunePlot) error {
	s := t.Series
	if len(s.step) == 0 {
		return fmt.Errorf("--plot %s: no steps to draw", path)
	}
	first, last := s.step[0]-1, s.step[len(s.step)-1]
	if first < 0 {
		first = 0
	}
	k := smoothing(len(s.step))
	newPanel := func(title, y string) *plot.Plot {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, "step", y
		p.X.Min, p.X.Max = first, last
		p.X.Tick.Marker, p.Y.Tick.Marker = readableTicks{}, readableTicks{}
		p.Title.TextStyle.Font.Size = vg.Points(11)
		p.Legend.TextStyle.Font.Size = vg.Points(9)
		p.Legend.Top = true
		return p
	}
	// Validation losses and F, when the loop validated during the run.
	vStep, vLoss := t.validation()
	var vF []float64
	if t.Crit != nil {
		for _, l := range vLoss {
			f, err := t.Crit.Eval(l, nil)
			if err != nil {
				f = math.NaN()
			}
			vF = append(vF, f)
		}
	}

	// (a) F.
	pa := newPanel("(a) criterion F", "F")
	lo, hi := finiteRange(s.F, vF)
	if plo, phi := positiveRange(s.F, vF); lo > 0 && phi/plo > 30 {
		pa.Y.Scale, pa.Y.Tick.Marker, pa.Y.Label.Text = plot.LogScale{}, readableTicks{Log: true}, "F (log scale)"
		lo, hi = plo, phi
	}
	if err := addLine(pa, s.step, s.F, plotFaint, vg.Points(0.7), "on each batch", false); err != nil {
		return err
	}
	if k > 1 {
		if err := addLine(pa, s.step, ema(s.F, k), plotBlue, vg.Points(1.4), fmt.Sprintf("moving average of %d batches", k), false); err != nil {
			return err
		}
	}
	if len(vF) > 0 {
		if err := addLine(pa, vStep, vF, plotRed, vg.Points(1.4), "on the validation data", true); err != nil {
			return err
		}
	}
	headroom(pa, lo, hi, 0.35)

	// (b) g and e.
	hasE := false
	for _, e := range s.E {
		hasE = hasE || e > 0
	}
	pb := newPanel("(b) g(θ)", "log scale")
	if hasE {
		pb.Title.Text = "(b) g(θ) and threshold e = γ·ē"
	}
	pb.Y.Scale, pb.Y.Tick.Marker = plot.LogScale{}, readableTicks{Log: true}
	lo, hi = positiveRange(s.G, s.E)
	headroom(pb, lo/1.5, hi, 0.45)
	var band *plotter.Polygon
	if hasE {
		var err error
		if band, err = bandStrip(pb, s.step, s.G, s.E, plotGreen); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	if err := addLine(pb, s.step, s.G, plotRed, vg.Points(0.8), "g(θ) on the batch", false); err != nil {
		return err
	}
	if hasE {
		if err := addLine(pb, s.step, s.E, plotGreen, vg.Points(1.4), "e = γ·ē", false); err != nil {
			return err
		}
	}
	if band != nil {
		pb.Legend.Add("steps in the Pareto band (g ≤ e)", band)
	}

	// (c) task losses over the steps, then the terms and drift.
	pc := newPanel("(c) task losses", "loss")
	m := len(t.Tasks)
	var all [][]float64
	for i := 0; i < m; i++ {
		c := trajectoryColors[i%len(trajectoryColors)]
		y := column(s.losses, i)
		label := fmt.Sprintf("%s, batch (moving average of %d)", t.Tasks[i], k)
		if k <= 1 {
			label = t.Tasks[i] + ", batch"
		}
		sm := ema(y, k)
		all = append(all, sm)
		if err := addLine(pc, s.step, sm, c, vg.Points(0.8), label, false); err != nil {
			return err
		}
		if len(vLoss) > 0 {
			v := column(vLoss, i)
			all = append(all, v)
			if err := addLine(pc, vStep, v, c, vg.Points(1.6), t.Tasks[i]+", validation", true); err != nil {
				return err
			}
		}
	}
	entries := m
	if len(vLoss) > 0 {
		entries *= 2
	}
	extra, err := s.addTermLines(pc, k, m)
	if err != nil {
		return err
	}
	all = append(all, extra...)
	entries += len(extra)
	lo, hi = finiteRange(all...)
	headroom(pc, lo, hi, 0.12*float64(max(2, entries)))

	panels := []*plot.Plot{pa, pb, pc}
	var trajs []*plot.Plot
	if m == 2 || m == 3 {
		tr, span, what := t.trajectory(vStep, vLoss)
		for a := 0; a < m; a++ {
			for b := a + 1; b < m; b++ {
				title := fmt.Sprintf("(%c) %s", 'd'+rune(len(trajs)), what)
				p, err := t.trajectoryPanel(tr, span, title, a, b, m == 2, len(vLoss) >= 3)
				if err != nil {
					return err
				}
				trajs = append(trajs, p)
			}
		}
	}
	var rows [][]*plot.Plot
	switch len(trajs) {
	case 1:
		rows = [][]*plot.Plot{{pa, pb}, {pc, trajs[0]}}
	case 3:
		rows = [][]*plot.Plot{panels, trajs}
	default:
		rows = [][]*plot.Plot{panels}
	}
	const cell = 4.4 * vg.Inch
	cols := len(rows[0])
	const titleRoom = 10 * vg.Millimeter
	img := vgimg.New(vg.Length(cols)*cell, vg.Length(len(rows))*cell+titleRoom)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(rows), Cols: cols, PadX: vg.Millimeter * 8, PadY: vg.Millimeter * 6,
		PadTop: titleRoom + vg.Millimeter*4, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(rows, tiles, dc)
	for r := range rows {
		for c, p := range rows[r] {
			p.Draw(canvases[r][c])
		}
	}
	ts := pa.Title.TextStyle
	ts.XAlign, ts.YAlign, ts.Font.Size = draw.XCenter, draw.YCenter, vg.Points(12)
	dc.FillText(ts, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Millimeter*6}, t.Title)
	return savePNG(img, path, "--plot")
}

// addTermLines draws the terms and drift over the steps into p (dashed,
// in the colours after the m tasks', under a moving average of k batches)
// and retitles it; it returns the lines drawn.
func (s *series) addTermLines(p *plot.Plot, k, m int) ([][]float64, error) {
	var lines [][]float64
	names := append([]string(nil), s.termNames...)
	for i := range s.termNames {
		lines = append(lines, ema(column(s.terms, i), k))
	}
	if s.hasDrift {
		names = append(names, criterion.Drift+" ‖θ − θ₀‖²")
		lines = append(lines, s.drift)
	}
	for i, y := range lines {
		label := names[i]
		if i < len(s.termNames) {
			label = fmt.Sprintf("%s (term), batch", names[i])
			if k > 1 {
				label = fmt.Sprintf("%s (term), batch (moving average of %d)", names[i], k)
			}
		}
		pts := make(plotter.XYs, 0, len(y))
		for j, v := range y {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				pts = append(pts, plotter.XY{X: s.step[j], Y: v})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("--plot: %s: %w", label, err)
		}
		l.Color = trajectoryColors[(m+i)%len(trajectoryColors)]
		l.Width = vg.Points(1.1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		p.Add(l)
		p.Legend.Add(label, l)
	}
	switch {
	case len(s.termNames) > 0 && s.hasDrift:
		p.Title.Text = "(c) task losses, terms and drift"
	case len(s.termNames) > 0:
		p.Title.Text = "(c) task losses and terms"
	case s.hasDrift:
		p.Title.Text = "(c) task losses and drift"
	}
	return lines, nil
}

// validation returns the steps and task losses measured on the
// validation data: before training (step 0), at the loop's validation
// steps, and after training when the loop did not validate at its last
// step. It returns nothing when the loop never validated or the report
// set is not the validation data.
func (t *tunePlot) validation() ([]float64, [][]float64) {
	s := t.Series
	if len(s.vLoss) == 0 || t.MeasuredOn != "validation" {
		return s.vStep, s.vLoss
	}
	last := s.step[len(s.step)-1]
	var step []float64
	var loss [][]float64
	if t.Before != nil {
		step, loss = append(step, 0), append(loss, t.Before)
	}
	step, loss = append(step, s.vStep...), append(loss, s.vLoss...)
	if s.vStep[len(s.vStep)-1] != last && t.After != nil {
		step, loss = append(step, last), append(loss, t.After)
	}
	return step, loss
}

// trajectory returns the points of the loss-space trajectory, the steps
// of its first and last point, and what they are: the validation losses
// (vStep, vLoss) when there are at least three; else the batch losses
// under a trailing moving average of about an eighth of the steps.
func (t *tunePlot) trajectory(vStep []float64, vLoss [][]float64) ([][]float64, [2]float64, string) {
	s := t.Series
	if len(vLoss) >= 3 {
		every := vStep[2] - vStep[1]
		return vLoss, [2]float64{vStep[0], vStep[len(vStep)-1]},
			fmt.Sprintf("validation losses (%d examples, every %g steps)", t.Examples, every)
	}
	k := max(1, len(s.losses)/8)
	var tr [][]float64
	for i := k - 1; i < len(s.losses); i++ {
		mean := make([]float64, len(s.losses[i]))
		for _, l := range s.losses[i-k+1 : i+1] {
			for j, v := range l {
				mean[j] += v / float64(k)
			}
		}
		tr = append(tr, mean)
	}
	span := [2]float64{s.step[k-1], s.step[len(s.step)-1]}
	if k == 1 {
		return tr, span, "batch losses"
	}
	return tr, span, fmt.Sprintf("batch losses, moving average of %d", k)
}

// trajectoryPanel draws the trajectory tr from step span[0] to span[1],
// titled title, in the plane of tasks a and b,
// its start and end marked, with iso-F contours through both when
// contours is set and a criterion is known, and a dot at every point
// with dots.
func (t *tunePlot) trajectoryPanel(tr [][]float64, span [2]float64, title string, a, b int, contours, dots bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.X.Label.Text, p.Y.Label.Text = "loss "+t.Tasks[a], "loss "+t.Tasks[b]
	p.X.Tick.Marker, p.Y.Tick.Marker = readableTicks{}, readableTicks{}
	pts := make([][2]float64, len(tr))
	xs, ys := make([]float64, len(tr)), make([]float64, len(tr))
	for i, l := range tr {
		pts[i] = [2]float64{l[a], l[b]}
		xs[i], ys[i] = l[a], l[b]
	}
	xlo, xhi := finiteRange(xs)
	ylo, yhi := finiteRange(ys)
	mx, my := 0.12*(xhi-xlo), 0.12*(yhi-ylo)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xlo-mx, xhi+mx, ylo-my, yhi+my+0.4*(yhi-ylo)
	if contours && t.Crit != nil {
		if err := isoF(p, t.Crit, tr[0], tr[len(tr)-1], a, b); err != nil {
			return nil, err
		}
	}
	l, sc, err := plotter.NewLinePoints(xys(pts))
	if err != nil {
		return nil, fmt.Errorf("--plot: trajectory: %w", err)
	}
	l.Color, l.Width = plotBlue, vg.Points(1)
	p.Add(l)
	if dots {
		sc.GlyphStyle = draw.GlyphStyle{Color: plotBlue, Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
		p.Add(sc)
	}
	p.Legend.Add("trajectory", l)
	for _, mk := range []struct {
		at    [2]float64
		c     color.Color
		label string
	}{{pts[0], plotOrange, fmt.Sprintf("start (step %g)", span[0])}, {pts[len(pts)-1], plotRed, fmt.Sprintf("end (step %g)", span[1])}} {
		s, err := plotter.NewScatter(xys([][2]float64{mk.at}))
		if err != nil {
			return nil, fmt.Errorf("--plot: %s: %w", mk.label, err)
		}
		s.GlyphStyle = draw.GlyphStyle{Color: mk.c, Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
		p.Add(s)
		p.Legend.Add(mk.label, s)
	}
	p.Legend.Top = true
	return p, nil
}

// isoF adds to p the contours of the criterion over the plane of tasks a
// and b (the other losses held at start's values) through F(start) and
// F(end), over p's axis ranges.
func isoF(p *plot.Plot, crit criterion.Criterion, start, end []float64, a, b int) error {
	levels := []float64{}
	for _, l := range [][]float64{start, end} {
		if f, err := crit.Eval(l, nil); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			levels = append(levels, f)
		}
	}
	if len(levels) == 0 {
		return nil
	}
	g := &critGrid{n: 80, x0: p.X.Min, x1: p.X.Max, y0: p.Y.Min, y1: p.Y.Max}
	g.z = make([]float64, g.n*g.n)
	l := append([]float64(nil), start...)
	finiteMax := math.Inf(-1)
	for r := 0; r < g.n; r++ {
		for c := 0; c < g.n; c++ {
			l[a], l[b] = g.X(c), g.Y(r)
			f, err := crit.Eval(l, nil)
			if err != nil || math.IsNaN(f) {
				f = math.Inf(1)
			}
			g.z[r*g.n+c] = f
			if !math.IsInf(f, 0) {
				finiteMax = max(finiteMax, f)
			}
		}
	}
	if math.IsInf(finiteMax, -1) {
		return nil
	}
	for i, f := range g.z {
		if math.IsInf(f, 0) {
			g.z[i] = 10*math.Abs(finiteMax) + 1
		}
	}
	c := plotter.NewContour(g, levels, nil)
	c.LineStyles = []draw.LineStyle{{Color: color.Gray{Y: 0x90}, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}}
	p.Add(c)
	key, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: p.Y.Min}, {X: p.X.Max, Y: p.Y.Max}})
	if err != nil {
		return fmt.Errorf("--plot: contours: %w", err)
	}
	key.LineStyle = c.LineStyles[0]
	p.Legend.Add("iso-F through start and end", key)
	return nil
}

// critGrid is the plotter.GridXYZ of a criterion's values on an n×n grid.
type critGrid struct {
	n              int
	x0, x1, y0, y1 float64
	z              []float64
}

func (g *critGrid) Dims() (c, r int)   { return g.n, g.n }
func (g *critGrid) Z(c, r int) float64 { return g.z[r*g.n+c] }
func (g *critGrid) X(c int) float64    { return g.x0 + (g.x1-g.x0)*float64(c)/float64(g.n-1) }
func (g *critGrid) Y(r int) float64    { return g.y0 + (g.y1-g.y0)*float64(r)/float64(g.n-1) }

// addLine adds the line through (x[i], y[i]) to p, skipping NaNs (and
// non-positive values on a log axis), dotted at each point with dots and
// entered in the legend as label unless label is empty. Nothing is drawn
// when no point remains.
func addLine(p *plot.Plot, x, y []float64, c color.Color, w vg.Length, label string, dots bool) error {
	pts := make(plotter.XYs, 0, len(x))
	for i := range x {
		if !math.IsNaN(y[i]) && !math.IsInf(y[i], 0) && (y[i] > 0 || !isLog(p)) {
			pts = append(pts, plotter.XY{X: x[i], Y: y[i]})
		}
	}
	if len(pts) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return fmt.Errorf("--plot: %s: %w", label, err)
	}
	l.Color, l.Width = c, w
	p.Add(l)
	if dots {
		s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(1.8), Shape: draw.CircleGlyph{}}
		p.Add(s)
	}
	if label != "" {
		p.Legend.Add(label, l)
	}
	return nil
}

// headroom sets p's Y range to [lo, hi] plus a fraction frac of it free
// above the data (a factor on a log axis), where the legend goes.
func headroom(p *plot.Plot, lo, hi, frac float64) {
	if isLog(p) {
		p.Y.Min, p.Y.Max = lo, hi*math.Pow(hi/lo, frac)
	} else {
		p.Y.Min, p.Y.Max = lo-0.04*(hi-lo), hi+(hi-lo)*frac
	}
	p.Legend.Top, p.Legend.Left = true, false
}

// column returns the i-th value of each row.
func column(rows [][]float64, i int) []float64 {
	out := make([]float64, len(rows))
	for r, row := range rows {
		out[r] = math.NaN()
		if i < len(row) {
			out[r] = row[i]
		}
	}
	return out
}

// smoothing is the moving-average span used for n noisy batch values.
func smoothing(n int) int { return max(1, n/20) }

// ema returns the exponential moving average of x with span k (weight
// 2/(k+1)); k ≤ 1 returns x.
func ema(x []float64, k int) []float64 {
	if k <= 1 || len(x) == 0 {
		return x
	}
	a := 2 / float64(k+1)
	out := make([]float64, len(x))
	out[0] = x[0]
	for i := 1; i < len(x); i++ {
		out[i] = a*x[i] + (1-a)*out[i-1]
	}
	return out
}
