package finetune

import (
	"encoding/csv"
	"io"
	"strconv"
)

// CSVRecorder writes one row per step and model: step, [model,] one
// column per task loss, one per term, drift, F, g, e, control (1 on, 0
// off), vnorm, lr, seconds. The model column appears only when several
// models train together, the term columns only with terms
// (Config.Terms), drift only when a criterion reads it.
type CSVRecorder struct {
	W io.Writer
	// Continue leaves the header out: W already holds it (a resumed run
	// continuing its trace).
	Continue bool
	cw       *csv.Writer
	multi    bool
	drift    bool
}

// NewCSVRecorder returns a CSVRecorder writing to w.
func NewCSVRecorder(w io.Writer) *CSVRecorder { return &CSVRecorder{W: w} }

// Init writes the header.
func (r *CSVRecorder) Init(cfg *Config) error {
	r.cw = csv.NewWriter(r.W)
	r.multi = cfg.Models > 1
	head := []string{"step"}
	if r.multi {
		head = append(head, "model")
	}
	head = append(head, cfg.Tasks...)
	head = append(head, cfg.Terms...)
	if r.drift = cfg.Drift; r.drift {
		head = append(head, "drift")
	}
	head = append(head, "F", "g", "e", "control", "vnorm", "lr", "seconds")
	if r.Continue {
		return nil
	}
	r.cw.Write(head)
	r.cw.Flush()
	return r.cw.Error()
}

// Record writes the step's rows.
func (r *CSVRecorder) Record(st *Step) error {
	for k, p := range st.Points {
		row := []string{strconv.Itoa(st.Step)}
		if r.multi {
			row = append(row, strconv.Itoa(k))
		}
		for _, l := range p.Losses {
			row = append(row, num(l))
		}
		for _, v := range p.Terms {
			row = append(row, num(v))
		}
		if r.drift {
			row = append(row, num(p.Drift))
		}
		F := st.F
		if r.multi {
			F = p.F
		}
		control := "0"
		if p.Info.ControlOn {
			control = "1"
		}
		row = append(row, num(F), num(p.Info.G), num(p.Info.E), control, num(p.Info.VNorm), num(st.LR), num(st.Elapsed.Seconds()))
		r.cw.Write(row)
	}
	r.cw.Flush()
	return r.cw.Error()
}

// Done flushes the writer.
func (r *CSVRecorder) Done(*Result) error {
	if r.cw == nil {
		return nil
	}
	r.cw.Flush()
	return r.cw.Error()
}

func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
