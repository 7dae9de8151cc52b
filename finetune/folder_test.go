package finetune_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
)

// nyuExample is one example of a synthetic NYUv2 split, channels last as
// MTAN's preprocessing stores it: values differ by example, pixel and
// channel so that a misplaced value shows.
type nyuExample struct {
	image, label, depth, normal *importer.Tensor
}

func makeNYUExample(i, H, W int) nyuExample {
	img := make([]float64, H*W*3)
	nrm := make([]float64, H*W*3)
	for k := range img {
		img[k] = float64((i*7+k)%17) / 16
		nrm[k] = float64((i*3+k)%11)/5 - 1
	}
	lab := make([]float64, H*W)
	dep := make([]float32, H*W)
	for k := range lab {
		lab[k] = float64((i+k)%14 - 1) // −1 (no class) to 12
		dep[k] = float32((i*5+k)%9) / 2
	}
	return nyuExample{
		image:  &importer.Tensor{Type: importer.Float64, Shape: []int{H, W, 3}, F64: img},
		label:  &importer.Tensor{Type: importer.Float64, Shape: []int{H, W}, F64: lab},
		depth:  importer.NewFloat32("", []int{H, W, 1}, dep),
		normal: &importer.Tensor{Type: importer.Float64, Shape: []int{H, W, 3}, F64: nrm},
	}
}

// writeNYU writes n examples of H×W in MTAN's layout under dir.
func writeNYU(t *testing.T, dir string, n, H, W int) []nyuExample {
	t.Helper()
	var out []nyuExample
	for i := range n {
		e := makeNYUExample(i, H, W)
		out = append(out, e)
		for name, a := range map[string]*importer.Tensor{"image": e.image, "label": e.label, "depth": e.depth, "normal": e.normal} {
			writeNPY(t, filepath.Join(dir, name, fmt.Sprintf("%d.npy", i)), a)
		}
	}
	return out
}

func writeNPY(t *testing.T, path string, a *importer.Tensor) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := npz.WriteNPY(path, a); err != nil {
		t.Fatal(err)
	}
}

// chw returns the H×W×C values v as C×H×W float32 (np.moveaxis(v, -1, 0)).
func chw(v []float64, H, W, C int) []float32 {
	out := make([]float32, len(v))
	for h := range H {
		for w := range W {
			for c := range C {
				out[(c*H+h)*W+w] = float32(v[(h*W+w)*C+c])
			}
		}
	}
	return out
}

// nyuInMemory is the in-memory Dataset MTAN's loader makes of examples:
// image, depth and normal channels first as float32, label int64.
func nyuInMemory(ex []nyuExample, H, W int) *finetune.Dataset {
	n := len(ex)
	var img, dep, nrm []float32
	var lab []int64
	for _, e := range ex {
		img = append(img, chw(e.image.F64, H, W, 3)...)
		nrm = append(nrm, chw(e.normal.F64, H, W, 3)...)
		dep = append(dep, e.depth.F32...)
		for _, v := range e.label.F64 {
			lab = append(lab, int64(v))
		}
	}
	return &finetune.Dataset{Arrays: map[string]*importer.Tensor{
		"image":  importer.NewFloat32("image", []int{n, 3, H, W}, img),
		"label":  importer.NewInt64("label", []int{n, H, W}, lab),
		"depth":  importer.NewFloat32("depth", []int{n, 1, H, W}, dep),
		"normal": importer.NewFloat32("normal", []int{n, 3, H, W}, nrm),
	}}
}

func uses(names ...string) []finetune.Use {
	var out []finetune.Use
	for _, n := range names {
		out = append(out, finetune.Use{Key: n, Array: n, Role: fmt.Sprintf("array %q", n)})
	}
	return out
}

func openBound(t *testing.T, spec string, u []finetune.Use, limit int) (*finetune.Folder, *finetune.Dataset) {
	t.Helper()
	s, err := finetune.ParseSource(spec)
	if err != nil {
		t.Fatal(err)
	}
	f, err := finetune.OpenFolder(s)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := finetune.BindFolder(f, u, limit, spec)
	if err != nil {
		t.Fatal(err)
	}
	return f, ds
}

// sameBatch compares two batches value by value, types and shapes.
func sameBatch(t *testing.T, what string, got, want finetune.Batch) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d arrays, want %d", what, len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if g == nil || g.Type != w.Type || !reflect.DeepEqual(g.Shape, w.Shape) ||
			!reflect.DeepEqual(g.F32, w.F32) || !reflect.DeepEqual(g.F64, w.F64) || !reflect.DeepEqual(g.I64, w.I64) {
			t.Fatalf("%s: array %q differs from the in-memory load: got %v %v, want %v %v", what, k, g.Type, g.Shape, w.Type, w.Shape)
		}
	}
}

// TestFolderBatchesMatchInMemory: batches read from a folder source (an
// NYUv2 split in MTAN's layout, and a general folder) equal the batches
// of the same data loaded whole, for the epoch's shuffled batches, a
// slice, and a prefix (limit).
func TestFolderBatchesMatchInMemory(t *testing.T) {
	const n, H, W = 7, 4, 5
	nyuDir := t.TempDir()
	ex := writeNYU(t, nyuDir, n, H, W)

	// A general folder: x H×W×2 float32 (moved to 2×H×W), y one int64
	// per example, z a float64 vector of 3.
	genDir := t.TempDir()
	var xs []float32
	var ys []int64
	var zs []float64
	for i := range n {
		x := make([]float64, H*W*2)
		for k := range x {
			x[k] = float64(i*100 + k)
		}
		xf := make([]float32, len(x))
		for k, v := range x {
			xf[k] = float32(v)
		}
		writeNPY(t, filepath.Join(genDir, "x", fmt.Sprintf("%d.npy", i)), importer.NewFloat32("", []int{H, W, 2}, xf))
		xs = append(xs, chw(x, H, W, 2)...)
		writeNPY(t, filepath.Join(genDir, "y", fmt.Sprintf("%d.npy", i)), importer.NewInt64("", []int{}, []int64{int64(i % 3)}))
		ys = append(ys, int64(i%3))
		z := []float64{float64(i), -float64(i), 0.5}
		writeNPY(t, filepath.Join(genDir, "z", fmt.Sprintf("%d.npy", i)), &importer.Tensor{Type: importer.Float64, Shape: []int{3}, F64: z})
		zs = append(zs, z...)
	}
	gen := &finetune.Dataset{Arrays: map[string]*importer.Tensor{
		"x": importer.NewFloat32("x", []int{n, 2, H, W}, xs),
		"y": importer.NewInt64("y", []int{n}, ys),
		"z": {Name: "z", Type: importer.Float64, Shape: []int{n, 3}, F64: zs},
	}}

	for _, tc := range []struct {
		name  string
		spec  string
		names []string
		want  *finetune.Dataset
		limit int
	}{
		{"nyuv2", "nyuv2:" + nyuDir, []string{"image", "label", "depth", "normal"}, nyuInMemory(ex, H, W), 0},
		{"nyuv2 two arrays", "nyuv2:" + nyuDir, []string{"image", "label"}, nyuInMemory(ex, H, W), 0},
		{"nyuv2 limit", "nyuv2:" + nyuDir, []string{"image", "label", "depth", "normal"}, nyuInMemory(ex, H, W).Prefix(5), 5},
		{"folder", "folder:" + genDir, []string{"x", "y", "z"}, gen, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := uses(tc.names...)
			want, err := finetune.Bind(tc.want.Arrays, u, 0, "memory")
			if err != nil {
				t.Fatal(err)
			}
			_, got := openBound(t, tc.spec, u, tc.limit)
			if !got.FileBacked() || got.Len() != want.Len() {
				t.Fatalf("file-backed %v, %d examples; want %d", got.FileBacked(), got.Len(), want.Len())
			}
			if err := got.Validate(); err != nil {
				t.Fatal(err)
			}
			for _, name := range tc.names {
				g, w := got.Arrays[name], want.Arrays[name]
				if g.Type != w.Type || !reflect.DeepEqual(g.Shape, w.Shape) {
					t.Errorf("header %q: %v %v, want %v %v", name, g.Type, g.Shape, w.Type, w.Shape)
				}
			}
			for epoch := range 2 {
				for _, idx := range got.Batches(3, epoch, 3) {
					g, err := got.Take(idx)
					if err != nil {
						t.Fatal(err)
					}
					sameBatch(t, fmt.Sprintf("epoch %d batch %v", epoch, idx), g, want.Subset(idx))
				}
			}
			g, err := got.Rows(1, 4)
			if err != nil {
				t.Fatal(err)
			}
			sameBatch(t, "rows 1..3", g, want.Slice(1, 4))
			sameBatch(t, "prefix", got.Prefix(2).Slice(0, 2), want.Slice(0, 2))
		})
	}
}
