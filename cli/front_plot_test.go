package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestPlotFront draws two and three tasks (one panel, three pairwise
// panels) and checks that PNG images of the expected widths are written.
func TestPlotFront(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		tasks []string
		pts   [][]float64
		front [][2]float64
	}{
		{[]string{"a", "b"}, [][]float64{{0.1, 0.9}, {0.5, 0.5}, {0.9, 0.1}}, [][2]float64{{0, 1}, {1, 0}}},
		{[]string{"a", "b", "c"}, [][]float64{{0.1, 0.9, 0.3}, {0.5, 0.5, 0.2}, {0.9, 0.1, 0.4}}, nil},
	} {
		path := filepath.Join(dir, "f.png")
		if err := plotFront(path, "test", tc.tasks, tc.pts, tc.front); err != nil {
			t.Fatalf("%d tasks: %v", len(tc.tasks), err)
		}
		b, _ := os.ReadFile(path)
		if !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) < 24 {
			t.Fatalf("%d tasks: not a PNG image", len(tc.tasks))
		}
		// IHDR width, big-endian at bytes 16..19: 5 in or 15 in at 96 dpi.
		w := int(b[16])<<24 | int(b[17])<<16 | int(b[18])<<8 | int(b[19])
		want := 480
		if len(tc.tasks) == 3 {
			want = 1440
		}
		if w != want {
			t.Errorf("%d tasks: image width %d, want %d", len(tc.tasks), w, want)
		}
	}
	// Model 2 is dominated by model 1; models 0 and 1 are not dominated.
	if err := plotFront(filepath.Join(dir, "d.png"), "dominated", []string{"a", "b"}, [][]float64{{0.1, 0.9}, {0.5, 0.5}, {0.6, 0.5}}, nil); err != nil {
		t.Errorf("a dominated model: %v", err)
	}
	for _, tc := range []struct {
		a, b []float64
		want bool
	}{
		{[]float64{1, 1}, []float64{1, 2}, true},
		{[]float64{1, 1}, []float64{1, 1}, false},
		{[]float64{0, 2}, []float64{1, 1}, false},
	} {
		if got := dominates(tc.a, tc.b); got != tc.want {
			t.Errorf("dominates(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	if err := plotFront(filepath.Join(dir, "g.png"), "x", []string{"a"}, [][]float64{{1}}, nil); err == nil {
		t.Error("one task: no error")
	}
}
