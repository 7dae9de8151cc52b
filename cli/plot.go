package cli

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
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
