package cli

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/paretonav/paretonav/internal/atomicfile"
)

// trajectoryColors are the colours of successive models' trajectories.
var trajectoryColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// plotTrajectories draws loss-space trajectories (one per model, each a
// list of (ℓ1, ℓ2) points) over the true front and saves a PNG image of
// 5×5 inches at path. It needs no display.
func plotTrajectories(path, title string, tasks []string, front [][2]float64, trajs [][][2]float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = tasks[0], tasks[1]
	p.X.Tick.Marker, p.Y.Tick.Marker = readableTicks{}, readableTicks{}
	if len(front) > 0 {
		l, err := plotter.NewLine(xys(front))
		if err != nil {
			return fmt.Errorf("--plot: front: %w", err)
		}
		l.Color, l.Width, l.Dashes = color.Gray{Y: 0x80}, vg.Points(1.5), []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("true front", l)
	}
	for k, tr := range trajs {
		if len(tr) == 0 {
			continue
		}
		c := trajectoryColors[k%len(trajectoryColors)]
		l, err := plotter.NewLine(xys(tr))
		if err != nil {
			return fmt.Errorf("--plot: model %d: %w", k, err)
		}
		l.Color, l.Width = c, vg.Points(1)
		ends, _ := plotter.NewScatter(xys([][2]float64{tr[0], tr[len(tr)-1]}))
		ends.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
		p.Add(l, ends)
		if len(trajs) > 1 {
			p.Legend.Add(fmt.Sprintf("model %d", k), l)
		} else {
			p.Legend.Add("trajectory", l)
		}
	}
	p.Legend.Top = true
	if err := p.Save(5*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	return nil
}

func xys(pts [][2]float64) plotter.XYs {
	out := make(plotter.XYs, len(pts))
	for i, p := range pts {
		out[i].X, out[i].Y = p[0], p[1]
	}
	return out
}

// isLog reports whether p's Y axis has a log scale.
func isLog(p *plot.Plot) bool { _, ok := p.Y.Scale.(plot.LogScale); return ok }

// positiveRange returns the smallest and largest positive finite values
// of the slices (1 and 10 when there are none).
func positiveRange(xs ...[]float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		for _, v := range x {
			if v > 0 && !math.IsInf(v, 0) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if lo > hi {
		return 1, 10
	}
	if lo == hi {
		return lo / 2, hi * 2
	}
	return lo, hi
}

// finiteRange returns the smallest and largest finite values of the
// slices (0 and 1 when there are none; a margin around a single value).
func finiteRange(xs ...[]float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		for _, v := range x {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	switch {
	case lo > hi:
		return 0, 1
	case lo == hi:
		d := max(math.Abs(lo)*0.05, 1e-9)
		return lo - d, hi + d
	}
	return lo, hi
}

// bandRuns returns the runs [i, j) of steps in the Pareto band, g ≤ e:
// what the legend names, not the control being off (the improper-trade
// guard keeps the control on inside the band).
func bandRuns(g, e []float64) [][2]int {
	var runs [][2]int
	in := func(i int) bool { return g[i] <= e[i] }
	for i := 0; i < len(g); {
		if !in(i) {
			i++
			continue
		}
		j := i
		for j < len(g) && in(j) {
			j++
		}
		runs = append(runs, [2]int{i, j})
		i = j
	}
	return runs
}

// bandStrip shades, along the bottom of p (a log Y axis from p.Y.Min),
// one bar of colour c per run of steps in the Pareto band (bandRuns). It
// returns the last bar, for a legend entry, or nil when no step was in
// the band.
func bandStrip(p *plot.Plot, step, g, e []float64, c color.Color) (*plotter.Polygon, error) {
	stripTop := p.Y.Min * math.Pow(p.Y.Max/p.Y.Min, 0.04)
	var band *plotter.Polygon
	for _, r := range bandRuns(g, e) {
		x0, x1 := step[r[0]]-0.5, step[r[1]-1]+0.5
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: p.Y.Min}, {X: x1, Y: p.Y.Min}, {X: x1, Y: stripTop}, {X: x0, Y: stripTop}})
		if err != nil {
			return nil, fmt.Errorf("band: %w", err)
		}
		poly.Color, poly.LineStyle.Width = c, 0
		p.Add(poly)
		band = poly
	}
	return band, nil
}

// readableTicks is a plot.Ticker that places ticks as plot.DefaultTicks
// does (with Log, at powers of ten as plot.LogTicks does, labelled with
// the shortest exact text; at the default places when fewer than two
// powers of ten fall in the range) and labels those major ticks with
// just enough digits that neighbouring labels differ and each label reads
// back within a thousandth of the tick spacing: 2.590, 2.595, 2.600
// rather than 2.6, 2.6, 2.6.
type readableTicks struct {
	Log bool
}

var _ plot.Ticker = readableTicks{}

// Ticks implements plot.Ticker.
func (t readableTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	if t.Log && lo > 0 {
		ticks = plot.LogTicks{Prec: -1}.Ticks(lo, hi)
		inside := 0
		for _, tk := range ticks {
			if tk.Label != "" && tk.Value >= lo && tk.Value <= hi {
				inside++
			}
		}
		if inside >= 2 {
			// LogTicks multiplies its way up, labelling 9.999999999999999e-05.
			for i, tk := range ticks {
				if tk.Label != "" {
					ticks[i].Label = strconv.FormatFloat(math.Pow10(int(math.Round(math.Log10(tk.Value)))), 'g', -1, 64)
				}
			}
			return ticks
		}
		ticks = plot.DefaultTicks{}.Ticks(lo, hi)
	} else {
		ticks = plot.DefaultTicks{}.Ticks(lo, hi)
	}
	var major []int
	for i, tk := range ticks {
		if tk.Label != "" {
			major = append(major, i)
		}
	}
	labels := tickLabels(ticks, major)
	for k, i := range major {
		ticks[i].Label = labels[k]
	}
	return ticks
}

// tickLabels formats the values of ticks[major] with the fewest digits
// that keep neighbours distinct and each within a thousandth of the
// smallest spacing of its value.
func tickLabels(ticks []plot.Tick, major []int) []string {
	vals := make([]float64, len(major))
	for k, i := range major {
		vals[k] = ticks[i].Value
	}
	spacing := math.Inf(1)
	for k := 1; k < len(vals); k++ {
		spacing = min(spacing, math.Abs(vals[k]-vals[k-1]))
	}
	big := 0.0
	for _, v := range vals {
		big = max(big, math.Abs(v))
	}
	fixed := big < 1e6 && (big >= 1e-3 || big == 0)
	out := make([]string, len(vals))
	for prec := 0; prec <= 16; prec++ {
		ok := true
		for k, v := range vals {
			if fixed {
				out[k] = strconv.FormatFloat(v, 'f', prec, 64)
			} else {
				out[k] = strconv.FormatFloat(v, 'g', prec+1, 64)
			}
			back, err := strconv.ParseFloat(out[k], 64)
			tol := 1e-3 * spacing
			if math.IsInf(spacing, 1) {
				tol = 1e-3 * math.Abs(v)
			}
			if err != nil || math.Abs(back-v) > tol || (k > 0 && out[k] == out[k-1]) {
				ok = false
			}
		}
		if ok {
			break
		}
	}
	for k, s := range out {
		if back, _ := strconv.ParseFloat(s, 64); back == 0 && strings.HasPrefix(s, "-") {
			out[k] = s[1:] // "-0.00" reads as "0.00"
		}
	}
	return out
}

// savePNG writes the canvas img as a PNG image at path (a temporary file
// renamed over it, internal/atomicfile); what names the plot in errors.
func savePNG(img *vgimg.Canvas, path, what string) error {
	err := atomicfile.Write(path, 0o644, func(w io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	return nil
}
