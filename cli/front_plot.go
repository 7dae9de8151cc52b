package cli

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotFront draws the models in loss space to a PNG at path: one panel for
// two tasks (over the true front when given), three pairwise panels for
// three; more tasks draw the first three pairs. Each model is a point
// numbered as its file model_K.onnx, filled when no other model is at
// least as good in every task (non-dominated in all tasks, not only the
// panel's two), hollow when dominated. Axes leave a margin around the
// points and head room above them for the legend; tick labels carry the
// digits that tell neighbouring ticks apart. The losses each model started
// from (starts, nil when unknown) are green crosses: with an ONNX model
// they lie on one another, the model the front was grown from.
func plotFront(path, title string, tasks []string, pts, starts [][]float64, trueFront [][2]float64) error {
	pairs := [][2]int{{0, 1}}
	if len(tasks) >= 3 {
		pairs = [][2]int{{0, 1}, {0, 2}, {1, 2}}
	}
	if len(tasks) < 2 {
		return fmt.Errorf("front.png: need at least 2 tasks, got %d", len(tasks))
	}
	dominated := make([]bool, len(pts))
	for i := range pts {
		for j := range pts {
			if j != i && dominates(pts[j], pts[i]) {
				dominated[i] = true
				break
			}
		}
	}
	var panels []*plot.Plot
	for _, pr := range pairs {
		p := plot.New()
		p.Title.Text = title
		if len(pairs) > 1 {
			p.Title.Text = fmt.Sprintf("loss %s against loss %s", tasks[pr[1]], tasks[pr[0]])
		}
		p.X.Label.Text, p.Y.Label.Text = "loss "+tasks[pr[0]], "loss "+tasks[pr[1]]
		p.X.Tick.Marker, p.Y.Tick.Marker = readableTicks{}, readableTicks{}
		p.Legend.TextStyle.Font.Size = vg.Points(10)
		xs, ys := make([]float64, len(pts)), make([]float64, len(pts))
		for k, q := range pts {
			xs[k], ys[k] = q[pr[0]], q[pr[1]]
		}
		for _, q := range starts {
			xs, ys = append(xs, q[pr[0]]), append(ys, q[pr[1]])
		}
		if len(trueFront) > 0 && pr == [2]int{0, 1} {
			l, err := plotter.NewLine(xys(trueFront))
			if err != nil {
				return fmt.Errorf("front.png: true front: %w", err)
			}
			l.Color, l.Width, l.Dashes = color.Gray{Y: 0x80}, vg.Points(1.5), []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
			p.Legend.Add("true Pareto front", l)
			for _, f := range trueFront {
				xs, ys = append(xs, f[0]), append(ys, f[1])
			}
		}
		xlo, xhi := finiteRange(xs)
		ylo, yhi := finiteRange(ys)
		mx, my := 0.08*(xhi-xlo), 0.08*(yhi-ylo)
		p.X.Min, p.X.Max = xlo-mx, xhi+mx
		p.Y.Min, p.Y.Max = ylo-my, yhi+my+0.25*(yhi-ylo)
		for _, group := range []struct {
			dominated bool
			label     string
		}{{false, "model k, non-dominated"}, {true, "model k, dominated"}} {
			var xy plotter.XYs
			var labels []string
			for k, q := range pts {
				if dominated[k] == group.dominated {
					xy = append(xy, plotter.XY{X: q[pr[0]], Y: q[pr[1]]})
					labels = append(labels, fmt.Sprint(k))
				}
			}
			if len(xy) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return fmt.Errorf("front.png: models: %w", err)
			}
			var shape draw.GlyphDrawer = draw.CircleGlyph{}
			if group.dominated {
				shape = draw.RingGlyph{}
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: trajectoryColors[0], Radius: vg.Points(4), Shape: shape}
			lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: labels})
			if err != nil {
				return fmt.Errorf("front.png: labels: %w", err)
			}
			lb.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(3)}
			p.Add(sc, lb)
			p.Legend.Add(group.label, sc)
		}
		if len(starts) > 0 {
			xy := make(plotter.XYs, len(starts))
			for k, q := range starts {
				xy[k] = plotter.XY{X: q[pr[0]], Y: q[pr[1]]}
			}
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return fmt.Errorf("front.png: starting points: %w", err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: startColor, Radius: vg.Points(5), Shape: draw.CrossGlyph{}}
			p.Add(sc)
			p.Legend.Add("start", sc)
		}
		p.Legend.Top = true
		panels = append(panels, p)
	}
	if len(panels) == 1 {
		if err := panels[0].Save(5*vg.Inch, 5*vg.Inch, path); err != nil {
			return fmt.Errorf("front.png %s: %w", path, err)
		}
		return nil
	}
	// Three panels side by side under the overall title.
	const w, h = 15 * vg.Inch, 5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Points(10), PadTop: vg.Millimeter * 11}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	ts := panels[0].Title.TextStyle
	ts.XAlign, ts.YAlign, ts.Font.Size = draw.XCenter, draw.YCenter, vg.Points(13)
	dc.FillText(ts, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Millimeter*5}, title)
	return savePNG(img, path, "front.png")
}

// startColor marks where the models started in front.png.
var startColor = color.RGBA{R: 0x00, G: 0x99, B: 0x33, A: 0xff}

// dominates reports whether a is at least as good as b in every task and
// better in one (lower losses).
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
