package finetune

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Progress shows a run's progress: on a terminal, a bar redrawn in place
// with the step, the ETA, F and g (the largest over the models) as the
// step measured them; otherwise a plain line every Interval. With training
// data they are the last batch's and read "batch F", which differs from F
// on a whole data set as a summary reports it.
type Progress struct {
	W        io.Writer
	Terminal bool          // redraw a bar in place (set by NewProgress for terminals)
	Interval time.Duration // between plain lines (default 5 s); a terminal bar is redrawn at most every 100 ms
	Width    int           // bar width in characters (default 30)

	total, start int
	last         time.Time
	began        time.Time
	drawn        bool
	fLabel       string // "batch F" with training data, else "F"
}

// NewProgress returns a Progress writing to w, drawing a bar when w is a
// terminal (an *os.File whose mode is a character device).
func NewProgress(w io.Writer) *Progress {
	f, ok := w.(*os.File)
	return &Progress{W: w, Terminal: ok && IsTerminal(f)}
}

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Init notes the step count.
func (p *Progress) Init(cfg *Config) error {
	p.total, p.start = cfg.Steps, cfg.StartStep
	p.began = time.Now()
	p.last = time.Time{}
	p.fLabel = "F"
	if cfg.TrainExamples > 0 {
		p.fLabel = "batch F"
	}
	if p.Interval == 0 {
		p.Interval = 5 * time.Second
	}
	if p.Width == 0 {
		p.Width = 30
	}
	return nil
}

// Record prints when the interval has passed (and at the last step).
func (p *Progress) Record(st *Step) error {
	now := time.Now()
	every := p.Interval
	if p.Terminal {
		every = 100 * time.Millisecond
	}
	if st.Step < p.total && !p.last.IsZero() && now.Sub(p.last) < every {
		return nil
	}
	if p.last.IsZero() && !p.Terminal && st.Step < p.total && now.Sub(p.began) < every {
		return nil
	}
	p.last = now
	g := st.Points[0].Info.G
	for _, pt := range st.Points[1:] {
		g = max(g, pt.Info.G)
	}
	eta := "?"
	if done := st.Step - p.start; done > 0 {
		left := time.Duration(float64(now.Sub(p.began)) / float64(done) * float64(p.total-st.Step))
		eta = left.Round(time.Second).String()
	}
	stats := fmt.Sprintf("%d/%d ETA %s %s=%#.4g g=%#.4g", st.Step, p.total, eta, p.fLabel, st.F, g)
	if !p.Terminal {
		_, err := fmt.Fprintf(p.W, "step %s\n", stats)
		return err
	}
	fill := p.Width * st.Step / max(p.total, 1)
	_, err := fmt.Fprintf(p.W, "\r[%s%s] %s\x1b[K", strings.Repeat("#", fill), strings.Repeat(".", p.Width-fill), stats)
	p.drawn = true
	return err
}

// Done ends the bar's line and prints the status with the final F (the
// last batch's with training data).
func (p *Progress) Done(res *Result) error {
	if p.drawn {
		fmt.Fprintln(p.W)
	}
	if res == nil {
		return nil
	}
	label := p.fLabel
	if label == "" {
		label = "F"
	}
	took := time.Since(p.began).Round(time.Millisecond)
	if res.Status == Failed && res.Steps == 0 {
		_, err := fmt.Fprintf(p.W, "failed before the first step, after %s\n", took)
		return err
	}
	_, err := fmt.Fprintf(p.W, "%s after %d steps in %s, %s=%#.4g\n", res.Status.Verb(), res.Steps, took, label, res.F)
	return err
}
