package cli

import (
	"bytes"
	"image/png"
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
		if err := plotFront(path, "test", tc.tasks, tc.pts, nil, tc.front); err != nil {
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
	if err := plotFront(filepath.Join(dir, "d.png"), "dominated", []string{"a", "b"}, [][]float64{{0.1, 0.9}, {0.5, 0.5}, {0.6, 0.5}}, nil, nil); err != nil {
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
	if err := plotFront(filepath.Join(dir, "g.png"), "x", []string{"a"}, [][]float64{{1}}, nil, nil); err == nil {
		t.Error("one task: no error")
	}
}

// TestPlotFrontMarksStart: the losses the models started from are drawn
// (in startColor) when given, and only then.
func TestPlotFrontMarksStart(t *testing.T) {
	dir := t.TempDir()
	pts := [][]float64{{0.1, 0.9}, {0.5, 0.5}, {0.9, 0.1}}
	for _, tc := range []struct {
		name   string
		tasks  []string
		pts    [][]float64
		starts [][]float64
	}{
		{"two tasks", []string{"a", "b"}, pts, [][]float64{{1, 1}, {1.001, 0.999}}},
		{"three tasks", []string{"a", "b", "c"}, [][]float64{{0.1, 0.9, 0.3}, {0.5, 0.5, 0.2}}, [][]float64{{1, 1, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			count := func(starts [][]float64) int {
				path := filepath.Join(dir, "s.png")
				if err := plotFront(path, "start", tc.tasks, tc.pts, starts, nil); err != nil {
					t.Fatal(err)
				}
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				img, err := png.Decode(f)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				b := img.Bounds()
				for y := b.Min.Y; y < b.Max.Y; y++ {
					for x := b.Min.X; x < b.Max.X; x++ {
						r, g, bl, _ := img.At(x, y).RGBA()
						if r>>8 < 0x30 && g>>8 > 0x70 && g>>8 < 0xc0 && bl>>8 < 0x60 {
							n++
						}
					}
				}
				return n
			}
			if without, with := count(nil), count(tc.starts); without != 0 || with == 0 {
				t.Errorf("start-coloured pixels: %d without starting points, %d with; want 0 and some", without, with)
			}
		})
	}
}
