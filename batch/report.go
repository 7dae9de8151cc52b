package batch

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

//go:embed report.html.tmpl
var reportTemplate string

var reportPage = template.Must(template.New("report").Parse(reportTemplate))

// reportData is what report.html.tmpl renders.
type reportData struct {
	Dir      string
	Jobs     int
	Counts   map[string]int
	Panels   []template.HTML // one SVG per pair of tasks
	Parallel template.HTML   // parallel coordinates (3 or more tasks)
	Columns  []column
	// Metrics are the task metrics' columns, in a table of their own so
	// that each table fits the page.
	Metrics []column
	Rows    []reportRow
}

// reportRow is one table row: its cells and links.
type reportRow struct {
	Row     *Row
	Cells   []reportCell
	Metrics []reportCell
	Model   string
	Log     string
}

// Label names the row: its job's ID, and the model's index for a front
// job's model ("ID model 2").
func (r reportRow) Label() string {
	if r.Row.Model == nil {
		return r.Row.ID
	}
	return fmt.Sprintf("%s model %d", r.Row.ID, *r.Row.Model)
}

// reportCell is one table cell: Text as shown (numbers to 4 significant
// digits), Full the value results.csv holds (the sort key and tooltip).
type reportCell struct {
	Text    string
	Full    string
	Numeric bool
}

// Header is the column's name with line-break opportunities after "_" and
// "/", so that long names wrap instead of widening the table.
func (c column) Header() template.HTML {
	s := esc(c.Name)
	s = strings.ReplaceAll(s, "_", "_<wbr>")
	s = strings.ReplaceAll(s, "/", "/<wbr>")
	return template.HTML(s)
}

// shortNumber writes a numeric cell to 4 significant digits; other text
// is kept.
func shortNumber(s string) string {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || strings.IndexFunc(s, func(r rune) bool { return r == '.' || r == 'e' || r == 'E' }) < 0 {
		return s
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// html renders report.html: one page, no network (styles, script and the
// SVG pictures inline).
func (c *Collection) html() ([]byte, error) {
	d := reportData{Dir: c.Dir, Jobs: c.Jobs(), Counts: map[string]int{}}
	// The table leaves out name (the ID starts with it), non_dominated
	// (the rows' colour says it) and explanation (folded into the files
	// cell: a sentence would widen the table).
	metric := map[string]bool{}
	for _, m := range c.Metrics {
		metric[m] = true
	}
	for _, col := range c.columns() {
		switch {
		case metric[col.Name]:
			d.Metrics = append(d.Metrics, col)
		case col.Name != "non_dominated" && col.Name != "name" && col.Name != "explanation":
			d.Columns = append(d.Columns, col)
		}
	}
	var pts []plotPoint
	for i := range c.Rows {
		r := &c.Rows[i]
		if r.Model == nil || *r.Model == 0 {
			d.Counts[r.Status]++
		}
		rr := reportRow{Row: r, Model: r.Files["model"], Log: r.Files["log"]}
		if rr.Model == "" {
			rr.Model = r.Files["model_0"]
		}
		rr.Cells, rr.Metrics = cells(d.Columns, r), cells(d.Metrics, r)
		d.Rows = append(d.Rows, rr)
		if v := r.lossVector(c.Tasks); v != nil {
			pts = append(pts, plotPoint{id: rr.Label(), v: v, nd: r.NonDominated})
		}
	}
	m := len(c.Tasks)
	for a := 0; a < m; a++ {
		for b := a + 1; b < m; b++ {
			d.Panels = append(d.Panels, scatterSVG(c.Tasks[a], c.Tasks[b], a, b, pts))
		}
	}
	if m >= 3 {
		d.Parallel = parallelSVG(c.Tasks, pts)
	}
	var buf bytes.Buffer
	if err := reportPage.Execute(&buf, d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// cells are row r's cells in columns cols.
func cells(cols []column, r *Row) []reportCell {
	out := make([]reportCell, len(cols))
	for i, col := range cols {
		full := col.cell(r)
		text := full
		if col.Numeric {
			text = shortNumber(full)
		}
		out[i] = reportCell{Text: text, Full: full, Numeric: col.Numeric}
	}
	return out
}

// plotPoint is one done job (or one model of a front job) in loss space.
type plotPoint struct {
	id string
	v  []float64
	nd bool
}

// dataRange is the range of coordinate i of the points.
func dataRange(pts []plotPoint, i int) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		lo, hi = math.Min(lo, p.v[i]), math.Max(hi, p.v[i])
	}
	if len(pts) == 0 {
		return 0, 1
	}
	return lo, hi
}

// axisRange is dataRange padded by 5% on either side.
func axisRange(pts []plotPoint, i int) (lo, hi float64) {
	lo, hi = dataRange(pts, i)
	pad := 0.05 * (hi - lo)
	if pad == 0 {
		pad = 0.05*math.Abs(hi) + 1e-9
	}
	return lo - pad, hi + pad
}

// Geometry of the pictures (SVG user units, CSS pixels): a loss-space
// panel is panelW × panelH, two side by side within 1400 px.
const (
	panelW = 600
	panelH = 440
	margin = 52
)

// scatterSVG draws the points in the plane of tasks a and b, the
// non-dominated ones in red and on top, each with its job ID as a tooltip.
func scatterSVG(ta, tb string, a, b int, pts []plotPoint) template.HTML {
	xlo, xhi := axisRange(pts, a)
	ylo, yhi := axisRange(pts, b)
	innerW, innerH := float64(panelW-2*margin), float64(panelH-2*margin)
	x := func(v float64) float64 { return margin + (v-xlo)/(xhi-xlo)*innerW }
	y := func(v float64) float64 { return panelH - margin - (v-ylo)/(yhi-ylo)*innerH }
	var s strings.Builder
	fmt.Fprintf(&s, `<svg class="panel" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="loss_%s against loss_%s">`,
		panelW, panelH, panelW, panelH, esc(tb), esc(ta))
	fmt.Fprintf(&s, `<rect x="%d" y="%d" width="%g" height="%g" class="frame"/>`, margin, margin, innerW, innerH)
	fmt.Fprintf(&s, `<text x="%g" y="%d" class="label" text-anchor="middle">loss_%s</text>`, margin+innerW/2, panelH-8, esc(ta))
	fmt.Fprintf(&s, `<text x="14" y="%g" class="label" text-anchor="middle" transform="rotate(-90 14 %g)">loss_%s</text>`,
		margin+innerH/2, margin+innerH/2, esc(tb))
	// The data's smallest and largest values, labelled where they lie.
	dxlo, dxhi := dataRange(pts, a)
	dylo, dyhi := dataRange(pts, b)
	fmt.Fprintf(&s, `<text x="%.1f" y="%d" class="tick" text-anchor="middle">%.4g</text><text x="%.1f" y="%d" class="tick" text-anchor="middle">%.4g</text>`,
		x(dxlo), panelH-margin+14, dxlo, x(dxhi), panelH-margin+14, dxhi)
	fmt.Fprintf(&s, `<text x="%d" y="%.1f" class="tick" text-anchor="end">%.4g</text><text x="%d" y="%.1f" class="tick" text-anchor="end">%.4g</text>`,
		margin-4, y(dylo)+4, dylo, margin-4, y(dyhi)+4, dyhi)
	for _, pass := range []bool{false, true} {
		for _, p := range pts {
			if p.nd != pass {
				continue
			}
			cls, r := "pt", 3.5
			if p.nd {
				cls, r = "pt nd", 5.5
			}
			fmt.Fprintf(&s, `<circle cx="%.2f" cy="%.2f" r="%g" class="%s" data-id="%s"><title>%s</title></circle>`,
				x(p.v[a]), y(p.v[b]), r, cls, esc(p.id), esc(p.id))
		}
	}
	s.WriteString(`</svg>`)
	return template.HTML(s.String())
}

// parallelSVG draws parallel coordinates: one vertical axis per task
// (each scaled to its own range, low at the bottom) and one line per
// job, the non-dominated ones in red.
func parallelSVG(tasks []string, pts []plotPoint) template.HTML {
	m := len(tasks)
	w, h := 140*m+2*margin, 320
	inner := float64(h - 2*margin)
	lo, hi := make([]float64, m), make([]float64, m)
	for i := range tasks {
		lo[i], hi[i] = axisRange(pts, i)
	}
	ax := func(i int) float64 { return margin + float64(i)*float64(w-2*margin)/float64(m-1) }
	var s strings.Builder
	fmt.Fprintf(&s, `<svg class="parallel" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="parallel coordinates">`, w, h, w, h)
	for i, t := range tasks {
		fmt.Fprintf(&s, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="axis"/>`, ax(i), margin, ax(i), h-margin)
		fmt.Fprintf(&s, `<text x="%.1f" y="%d" class="label" text-anchor="middle">loss_%s</text>`, ax(i), margin-18, esc(t))
		dlo, dhi := dataRange(pts, i)
		fmt.Fprintf(&s, `<text x="%.1f" y="%d" class="tick" text-anchor="middle">%.4g</text>`, ax(i), margin-4, dhi)
		fmt.Fprintf(&s, `<text x="%.1f" y="%d" class="tick" text-anchor="middle">%.4g</text>`, ax(i), h-margin+14, dlo)
	}
	for _, pass := range []bool{false, true} {
		for _, p := range pts {
			if p.nd != pass {
				continue
			}
			var pl []string
			for i, v := range p.v {
				pl = append(pl, fmt.Sprintf("%.1f,%.1f", ax(i), float64(h-margin)-(v-lo[i])/(hi[i]-lo[i])*inner))
			}
			cls := "line"
			if p.nd {
				cls = "line nd"
			}
			fmt.Fprintf(&s, `<polyline points="%s" class="%s" data-id="%s"><title>%s</title></polyline>`,
				strings.Join(pl, " "), cls, esc(p.id), esc(p.id))
		}
	}
	s.WriteString(`</svg>`)
	return template.HTML(s.String())
}

// esc escapes s for SVG text and attributes.
func esc(s string) string { return template.HTMLEscapeString(s) }
