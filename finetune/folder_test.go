package finetune_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
	// The same split with labels stored as int64 H×W×1.
	intDir := t.TempDir()
	writeNYU(t, intDir, n, H, W)
	for i, e := range ex {
		l := make([]int64, H*W)
		for k, v := range e.label.F64 {
			l[k] = int64(v)
		}
		writeNPY(t, filepath.Join(intDir, "label", fmt.Sprintf("%d.npy", i)), importer.NewInt64("", []int{H, W, 1}, l))
	}

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
		{"nyuv2 int labels H×W×1", "nyuv2:" + intDir, []string{"image", "label", "depth", "normal"}, nyuInMemory(ex, H, W), 0},
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

// TestFolderErrorsNameTheFile: every defect of a folder source is an
// error naming the file and what was expected, from the headers when the
// folder is opened (before any batch), or when a batch reads a file
// whose values are wrong or that changed since.
func TestFolderErrorsNameTheFile(t *testing.T) {
	const n, H, W = 5, 4, 5
	file := func(dir, name string, i int) string { return filepath.Join(dir, name, fmt.Sprintf("%d.npy", i)) }
	f64 := func(shape ...int) *importer.Tensor {
		n := 1
		for _, s := range shape {
			n *= s
		}
		return &importer.Tensor{Type: importer.Float64, Shape: shape, F64: make([]float64, n)}
	}
	for _, tc := range []struct {
		name   string
		kind   string // "nyuv2" (default) or "folder"
		break_ func(t *testing.T, dir string)
		atTake bool     // the error comes from reading a batch
		want   []string // substrings; "DIR" is replaced by the folder
	}{
		{"missing subfolder", "", func(t *testing.T, dir string) { os.RemoveAll(filepath.Join(dir, "normal")) },
			false, []string{"DIR has no subfolder normal/", "image/, label/, depth/ and normal/"}},
		{"missing index", "", func(t *testing.T, dir string) { os.Remove(file(dir, "label", 2)) },
			false, []string{"DIR/label/2.npy is missing", "without gaps"}},
		{"fewer examples", "", func(t *testing.T, dir string) { writeNPY(t, file(dir, "image", n), f64(H, W, 3)) },
			false, []string{fmt.Sprintf("DIR/label/%d.npy is missing", n), "image/ holds 6 examples (0.npy..5.npy) but label/ holds 5"}},
		{"shape mismatch", "", func(t *testing.T, dir string) { writeNPY(t, file(dir, "image", 3), f64(H, W, 4)) },
			false, []string{"DIR/image/3.npy: shape [4 5 4] of <f8", "DIR/image/0.npy has shape [4 5 3]"}},
		{"dtype mismatch", "", func(t *testing.T, dir string) {
			writeNPY(t, file(dir, "normal", 2), importer.NewFloat32("", []int{H, W, 3}, make([]float32, H*W*3)))
		}, false, []string{"DIR/normal/2.npy: shape [4 5 3] of <f4", "DIR/normal/0.npy has shape [4 5 3] of <f8"}},
		{"stray file", "", func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, "label", "notes.txt"), nil, 0o644) },
			false, []string{"DIR/label/notes.txt: want only files named 0.npy, 1.npy"}},
		{"leading zero", "", func(t *testing.T, dir string) { writeNPY(t, filepath.Join(dir, "depth", "01.npy"), f64(H, W, 1)) },
			false, []string{"DIR/depth/01.npy", "without leading zeros"}},
		{"truncated", "", func(t *testing.T, dir string) {
			p := file(dir, "normal", 1)
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-8)
		}, false, []string{"DIR/normal/1.npy", "472 bytes of values", "announces 480"}},
		{"not npy", "", func(t *testing.T, dir string) { os.WriteFile(file(dir, "image", 0), []byte("not numpy at all"), 0o644) },
			false, []string{"DIR/image/0.npy", "not a .npy"}},
		{"image rank", "", func(t *testing.T, dir string) {
			for i := range n {
				writeNPY(t, file(dir, "image", i), f64(H, W))
			}
		}, false, []string{"DIR/image/0.npy: shape [4 5]", "H×W×3"}},
		{"label rank", "", func(t *testing.T, dir string) {
			for i := range n {
				writeNPY(t, file(dir, "label", i), f64(H, W, 2))
			}
		}, false, []string{"DIR/label/0.npy: shape [4 5 2]", "an NYUv2 label is H×W or H×W×1"}},
		{"depth size", "", func(t *testing.T, dir string) {
			for i := range n {
				writeNPY(t, file(dir, "depth", i), f64(H, W+1, 1))
			}
		}, false, []string{"DIR/depth/0.npy: shape [4 6 1]", "H×W×1 or H×W", "4×5"}},
		{"integer image", "", func(t *testing.T, dir string) {
			for i := range n {
				writeNPY(t, file(dir, "image", i), importer.NewInt64("", []int{H, W, 3}, make([]int64, H*W*3)))
			}
		}, false, []string{"DIR/image/0.npy", "floating point"}},
		{"label not whole", "", func(t *testing.T, dir string) {
			l := f64(H, W)
			l.F64[7] = 2.5
			writeNPY(t, file(dir, "label", 4), l)
		}, true, []string{"DIR/label/4.npy", "value 2.5 at index 7 is not a whole number"}},
		{"changed after opening", "", nil, true, []string{"DIR/image/1.npy: shape [5 4 3]", "[4 5 3] when the data were checked"}},
		{"not a directory", "", func(t *testing.T, dir string) {
			os.RemoveAll(dir)
			os.WriteFile(dir, nil, 0o644)
		}, false, []string{"DIR is not a directory"}},
		{"no subfolders", "folder", func(t *testing.T, dir string) {
			for _, s := range nyuv2Arrays() {
				os.RemoveAll(filepath.Join(dir, s))
			}
		}, false, []string{"DIR has no subfolders"}},
		{"no examples", "folder", func(t *testing.T, dir string) {
			for _, s := range nyuv2Arrays() {
				os.RemoveAll(filepath.Join(dir, s))
				os.MkdirAll(filepath.Join(dir, s), 0o755)
			}
		}, false, []string{"DIR: no examples"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "train")
			writeNYU(t, dir, n, H, W)
			if tc.break_ != nil {
				tc.break_(t, dir)
			}
			kind := tc.kind
			if kind == "" {
				kind = "nyuv2"
			}
			s, err := finetune.ParseSource(kind + ":" + dir)
			if err != nil {
				t.Fatal(err)
			}
			f, err := finetune.OpenFolder(s)
			if !tc.atTake {
				checkErr(t, err, dir, tc.want)
				return
			}
			if err != nil {
				t.Fatalf("OpenFolder: %v", err)
			}
			ds, err := finetune.BindFolder(f, uses(nyuv2Arrays()...), 0, s.Spec)
			if err != nil {
				t.Fatal(err)
			}
			if tc.break_ == nil { // changed after opening
				writeNPY(t, file(dir, "image", 1), f64(W, H, 3))
			}
			_, err = ds.Rows(0, n)
			checkErr(t, err, dir, tc.want)
		})
	}
}

func nyuv2Arrays() []string { return []string{"image", "label", "depth", "normal"} }

func checkErr(t *testing.T, err error, dir string, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one containing %q", want)
	}
	for _, w := range want {
		if w = strings.ReplaceAll(w, "DIR", dir); !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

// TestFolderSourceAlone: a folder source merged with other sources is
// refused, naming it; given alone it is found.
func TestFolderSourceAlone(t *testing.T) {
	if _, _, err := finetune.FolderSource([]string{"nyuv2:d", "x=a.npy"}); err == nil || !strings.Contains(err.Error(), `"nyuv2:d" is a folder read a batch at a time`) {
		t.Errorf("merged: err = %v", err)
	}
	if s, ok, err := finetune.FolderSource([]string{" folder:d "}); err != nil || !ok || s.Path != "d" || s.Kind != finetune.KindFolder {
		t.Errorf("alone: %+v %v %v", s, ok, err)
	}
	if _, ok, err := finetune.FolderSource([]string{"a.npz", "x=b.npy"}); err != nil || ok {
		t.Errorf("files: %v %v", ok, err)
	}
	if _, err := finetune.LoadArrays([]string{"nyuv2:d"}); err == nil || !strings.Contains(err.Error(), "read a batch at a time") {
		t.Errorf("LoadArrays: err = %v", err)
	}
}

// TestFolderReadsOneBatchAtATime: over an epoch, a folder-backed data set
// decodes each example's files once per batch that holds it (no file
// read ahead or kept), and the most it holds at once is one batch and one
// decoded file: counted bytes, a fraction of the set. Bytes, what the
// memory plan counts for the data, is one decoded file.
func TestFolderReadsOneBatchAtATime(t *testing.T) {
	const n, H, W, batch = 30, 8, 8, 4
	dir := t.TempDir()
	writeNYU(t, dir, n, H, W)
	f, ds := openBound(t, "nyuv2:"+dir, uses(nyuv2Arrays()...), 0)
	if f.FilesRead() != 0 || f.PeakBytes() != 0 {
		t.Fatalf("opening read %d files, held %d bytes; want headers only", f.FilesRead(), f.PeakBytes())
	}
	perExample := int64(H * W * (4*3 + 8 + 4 + 4*3)) // image, label (int64), depth, normal as read
	file := int64(H * W * 3 * 8)                     // the largest file decoded: image or normal, float64
	if got := ds.Bytes(); got != file {
		t.Errorf("Bytes = %d; want one decoded file, %d", got, file)
	}
	for _, idx := range ds.Batches(1, 0, batch) {
		if _, err := ds.Take(idx); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.FilesRead(); got != 4*n {
		t.Errorf("an epoch read %d files; want %d (each example's 4 files once)", got, 4*n)
	}
	bound := batch*perExample + file
	if p := f.PeakBytes(); p == 0 || p > bound || p > n*perExample/5 {
		t.Errorf("peak %d bytes; want at most one batch and one file, %d, of the set's %d", p, bound, n*perExample)
	}
}

// TestFolderConvertsToTheHeaderType: a binding that converts an array of
// a folder (float64 to float32 for a model input, whole floats to int64
// for an integer input) changes its header's Type; the batches read then
// hold the converted values, and a float with a fraction is an error
// naming its file.
func TestFolderConvertsToTheHeaderType(t *testing.T) {
	dir := t.TempDir()
	vals := [][]float64{{1, 2, 3}, {4, 5, 6.5}}
	for i, v := range vals {
		writeNPY(t, filepath.Join(dir, "z", fmt.Sprintf("%d.npy", i)), &importer.Tensor{Type: importer.Float64, Shape: []int{3}, F64: v})
	}
	_, ds := openBound(t, "folder:"+dir, uses("z"), 0)
	if got := ds.Arrays["z"]; got.Type != importer.Float64 || !reflect.DeepEqual(got.Shape, []int{2, 3}) {
		t.Fatalf("header %v %v; want float64 [2 3]", got.Type, got.Shape)
	}
	f32 := ds.Clone()
	f32.Arrays["z"] = &importer.Tensor{Name: "z", Type: importer.Float32, Shape: []int{2, 3}}
	b, err := f32.Rows(0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{1, 2, 3, 4, 5, 6.5}; !reflect.DeepEqual(b["z"].F32, want) || b["z"].Type != importer.Float32 {
		t.Errorf("as float32: %v %v; want %v", b["z"].Type, b["z"].F32, want)
	}
	if ds.Arrays["z"].Type != importer.Float64 {
		t.Errorf("converting a clone changed the original's header")
	}
	ints := ds.Clone()
	ints.Arrays["z"] = &importer.Tensor{Name: "z", Type: importer.Int32, Shape: []int{2, 3}}
	if b, err := ints.Rows(0, 1); err != nil || !reflect.DeepEqual(b["z"].I64, []int64{1, 2, 3}) {
		t.Errorf("example 0 as int32: %v, %v; want [1 2 3]", b, err)
	}
	_, err = ints.Rows(1, 2)
	checkErr(t, err, dir, []string{"DIR/z/1.npy: value 6.5 at index 2 is not a whole number; z holds whole numbers"})
}
