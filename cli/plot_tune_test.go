package cli

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gonum.org/v1/plot"

	"github.com/paretonav/paretonav/png/criterion"
)

// fakeSeries returns n steps of m decreasing, noisy task losses, with
// validation losses every valEvery steps when valEvery > 0.
func fakeSeries(n, m, valEvery int) *series {
	s := &series{}
	for i := 1; i <= n; i++ {
		l := make([]float64, m)
		F := 0.0
		for j := range l {
			l[j] = 2/float64(j+1) + 1/(1+0.05*float64(i)) + 0.1*math.Sin(float64(7*i+j))
			F += l[j] * l[j]
		}
		s.step = append(s.step, float64(i))
		s.losses = append(s.losses, l)
		s.F = append(s.F, F)
		s.G = append(s.G, 0.5*math.Exp(-0.05*float64(i)))
		s.E = append(s.E, 0.1)
		if valEvery > 0 && i%valEvery == 0 {
			v := make([]float64, m)
			for j := range v {
				v[j] = 2/float64(j+1) + 1/(1+0.05*float64(i))
			}
			s.vStep = append(s.vStep, float64(i))
			s.vLoss = append(s.vLoss, v)
		}
	}
	return s
}

// TestPlotTune draws tune's plot for two tasks (with and without
// validation), three tasks and four tasks and checks the PNG image's
// size: 2×2 panels, 3+3 panels and one row of three.
func TestPlotTune(t *testing.T) {
	dir := t.TempDir()
	names := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		name        string
		m, valEvery int
		measuredOn  string
		cols, rows  int
	}{
		{"two tasks, batch trajectory", 2, 0, "training", 2, 2},
		{"two tasks, validation trajectory", 2, 10, "validation", 2, 2},
		{"three tasks", 3, 10, "validation", 3, 2},
		{"four tasks", 4, 0, "training", 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks := names[:tc.m]
			crit, err := criterion.Parse("a*a + b*b", tasks)
			if err != nil {
				t.Fatal(err)
			}
			s := fakeSeries(100, tc.m, tc.valEvery)
			before, after := make([]float64, tc.m), make([]float64, tc.m)
			for j := range before {
				before[j], after[j] = 3, 1
			}
			path := filepath.Join(dir, "tune.png")
			if err := plotTune(path, &tunePlot{Title: "test", Tasks: tasks, Series: s, Crit: crit,
				Before: before, After: after, MeasuredOn: tc.measuredOn, Examples: 64}); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cfg, err := png.DecodeConfig(f)
			if err != nil {
				t.Fatalf("not a PNG image: %v", err)
			}
			// 4.4 in per panel at 96 dpi, 10 mm of title room.
			wantW := int(math.Ceil(float64(tc.cols) * 4.4 * 96))
			wantH := int(math.Ceil((float64(tc.rows)*4.4 + 10/25.4) * 96))
			if abs(cfg.Width-wantW) > 1 || abs(cfg.Height-wantH) > 1 {
				t.Errorf("image %d×%d, want %d×%d", cfg.Width, cfg.Height, wantW, wantH)
			}
		})
	}
	if err := plotTune(filepath.Join(dir, "none.png"), &tunePlot{Series: &series{}}); err == nil {
		t.Error("no steps: no error")
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestReadableTicks checks that tick labels tell neighbouring ticks
// apart and read back close to their values.
func TestReadableTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		log    bool
		want   []string // the major labels, in order
	}{
		{2.590, 2.600, false, []string{"2.590", "2.595", "2.600"}},
		{0, 60, false, []string{"0", "30", "60"}},
		{-0.1, 0.1, false, []string{"-0.1", "0.0", "0.1"}},
		{0.01, 20, true, []string{"0.01", "0.1", "1", "10", "100"}},
		{1e-7, 1e-3, true, []string{"1e-07", "1e-06", "1e-05", "0.0001", "0.001"}},
	} {
		var got []string
		for _, tk := range (readableTicks{Log: tc.log}).Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ticks of [%g, %g] (log %v): labels %q, want %q", tc.lo, tc.hi, tc.log, got, tc.want)
		}
	}
	ticks := (readableTicks{}).Ticks(1000000, 1000001)
	seen := map[string]bool{}
	for _, tk := range ticks {
		if tk.Label == "" {
			continue
		}
		if seen[tk.Label] {
			t.Errorf("ticks of [1000000, 1000001]: label %q twice in %v", tk.Label, ticks)
		}
		seen[tk.Label] = true
	}
}

// TestPlotTermLines: panel (c) gets one dashed line per term and one for
// drift, titled after what it shows, and tune's plot with them is drawn.
func TestPlotTermLines(t *testing.T) {
	for _, tc := range []struct {
		terms []string
		drift bool
		title string
	}{
		{nil, false, "(c) task losses"},
		{[]string{"adv"}, false, "(c) task losses and terms"},
		{nil, true, "(c) task losses and drift"},
		{[]string{"adv", "kl"}, true, "(c) task losses, terms and drift"},
	} {
		s := fakeSeries(40, 2, 0)
		s.termNames, s.hasDrift = tc.terms, tc.drift
		for i := range s.step {
			v := make([]float64, len(tc.terms))
			for j := range v {
				v[j] = 1 + float64(j) + 0.01*float64(i)
			}
			s.terms = append(s.terms, v)
			if tc.drift {
				s.drift = append(s.drift, 1e-3*float64(i*i))
			}
		}
		p := plot.New()
		p.Title.Text = "(c) task losses"
		lines, err := s.addTermLines(p, 2, 2)
		if err != nil {
			t.Fatal(err)
		}
		want := len(tc.terms)
		if tc.drift {
			want++
		}
		if len(lines) != want || p.Title.Text != tc.title {
			t.Errorf("terms %v drift %v: %d lines titled %q, want %d titled %q", tc.terms, tc.drift, len(lines), p.Title.Text, want, tc.title)
		}
		path := filepath.Join(t.TempDir(), "tune.png")
		if err := plotTune(path, &tunePlot{Title: "t", Tasks: []string{"a", "b"}, Series: s}); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("terms %v drift %v: no plot written (%v)", tc.terms, tc.drift, err)
		}
	}
}

// TestBandRuns checks that the plots shade the steps with g ≤ e, as
// their legend says, whatever the control did: a step with the control
// on inside the band (an improper trade) is shaded, one with g above e
// is not.
func TestBandRuns(t *testing.T) {
	for _, tc := range []struct {
		name string
		g, e []float64
		want [][2]int
	}{
		{"none", []float64{2, 3}, []float64{1, 1}, nil},
		{"all", []float64{1, 0.5}, []float64{1, 1}, [][2]int{{0, 2}}},
		{"two runs, g = e counts", []float64{3, 1, 0.5, 2, 1, 4}, []float64{1, 1, 1, 1, 1, 1}, [][2]int{{1, 3}, {4, 5}}},
	} {
		if got := bandRuns(tc.g, tc.e); !slices.Equal(got, tc.want) {
			t.Errorf("%s: runs %v, want %v", tc.name, got, tc.want)
		}
	}
}
