package cli

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotFront draws the models in loss space to a PNG at path: one panel for
// two tasks (over the true front when given), three pairwise panels for
// three; more tasks draw the first three pairs. Each model is a labelled
// point.
func plotFront(path, title string, tasks []string, pts [][]float64, trueFront [][2]float64) error {
	pairs := [][2]int{{0, 1}}
	if len(tasks) >= 3 {
		pairs = [][2]int{{0, 1}, {0, 2}, {1, 2}}
	}
	if len(tasks) < 2 {
		return fmt.Errorf("front.png: need at least 2 tasks, got %d", len(tasks))
	}
	var panels []*plot.Plot
	for _, pr := range pairs {
		p := plot.New()
		p.Title.Text = title
		if len(pairs) > 1 {
			p.Title.Text = fmt.Sprintf("%s vs %s", tasks[pr[1]], tasks[pr[0]])
		}
		p.X.Label.Text, p.Y.Label.Text = tasks[pr[0]], tasks[pr[1]]
		if len(trueFront) > 0 && pr == [2]int{0, 1} {
			l, err := plotter.NewLine(xys(trueFront))
			if err != nil {
				return fmt.Errorf("front.png: true front: %w", err)
			}
			l.Color, l.Width, l.Dashes = color.Gray{Y: 0x80}, vg.Points(1.5), []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
			p.Legend.Add("true front", l)
		}
		xy := make(plotter.XYs, len(pts))
		labels := make([]string, len(pts))
		for k, q := range pts {
			xy[k].X, xy[k].Y = q[pr[0]], q[pr[1]]
			labels[k] = fmt.Sprintf(" %d", k)
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return fmt.Errorf("front.png: models: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: trajectoryColors[0], Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: labels})
		if err != nil {
			return fmt.Errorf("front.png: labels: %w", err)
		}
		p.Add(sc, lb)
		p.Legend.Add("models", sc)
		p.Legend.Top = true
		panels = append(panels, p)
	}
	if len(panels) == 1 {
		if err := panels[0].Save(5*vg.Inch, 5*vg.Inch, path); err != nil {
			return fmt.Errorf("front.png %s: %w", path, err)
		}
		return nil
	}
	const w, h = 15 * vg.Inch, 5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Points(10)}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	f, err := createFile(path)
	if err != nil {
		return fmt.Errorf("front.png %s: %w", path, err)
	}
	_, werr := vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("front.png %s: %w", path, werr)
	}
	return nil
}

func createFile(path string) (*os.File, error) { return os.Create(path) }
