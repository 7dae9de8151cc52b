package datasets

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/internal/testkit/idxtest"
)

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeSet writes an MNIST-layout folder holding n images of size×size
// whose image k has value 10+k at (k%size, k%size), labelled k%10.
func fakeSet(t *testing.T, dir string, split string, n, size int) {
	t.Helper()
	px := make([]uint8, n*size*size)
	lb := make([]uint8, n)
	for k := range n {
		px[k*size*size+(k%size)*size+k%size] = uint8(10 + k)
		lb[k] = uint8(k % 10)
	}
	writeFile(t, dir, split+"-images-idx3-ubyte.gz", idxtest.Gzip(idxtest.Encode([]int{n, size, size}, px)))
	writeFile(t, dir, split+"-labels-idx1-ubyte", idxtest.Encode([]int{n}, lb))
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	fakeSet(t, dir, "t10k", 5, 28)
	s, err := Load(dir, Test)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 5 || s.Images.N != 5 || s.Images.Rows != 28 || s.At3(t, 3, 3, 3) != 13 {
		t.Errorf("loaded %d images %dx%d", s.Len(), s.Images.Rows, s.Images.Cols)
	}

	tests := []struct {
		name    string
		setup   func(dir string)
		split   Split
		wantErr string
	}{
		{"missing files", func(string) {}, Train, "train-images-idx3-ubyte"},
		{"bad split", func(string) {}, "val", `split "val"`},
		{"count mismatch", func(d string) {
			fakeSet(t, d, "train", 4, 28)
			writeFile(t, d, "train-labels-idx1-ubyte", idxtest.Encode([]int{3}, []uint8{1, 2, 3}))
		}, Train, "4 images but"},
		{"label range", func(d string) {
			fakeSet(t, d, "train", 2, 28)
			writeFile(t, d, "train-labels-idx1-ubyte", idxtest.Encode([]int{2}, []uint8{1, 12}))
		}, Train, "label 12 at index 1"},
		{"images not 3-D", func(d string) {
			fakeSet(t, d, "train", 2, 28)
			writeFile(t, d, "train-images-idx3-ubyte.gz", idxtest.Gzip(idxtest.Encode([]int{2}, []uint8{1, 2})))
		}, Train, "3 dimensions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			tc.setup(d)
			_, err := Load(d, tc.split)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
}

// At3 returns pixel (r, c) of image i (test helper).
func (s *Set) At3(t *testing.T, i, r, c int) uint8 {
	t.Helper()
	return s.Images.At(i)[r*s.Images.Cols+c]
}

func TestCompose(t *testing.T) {
	dir := t.TempDir()
	fakeSet(t, dir, "train", 28, 28)
	src, err := Load(dir, Train)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Compose(src, src, 50, 42)
	if err != nil {
		t.Fatal(err)
	}
	x, l, r := out["x"], out["left"], out["right"]
	if !reflect.DeepEqual(x.Shape, []int{50, 1, 36, 36}) || !reflect.DeepEqual(l.Shape, []int{50}) || !reflect.DeepEqual(r.Shape, []int{50}) {
		t.Fatalf("shapes %v %v %v", x.Shape, l.Shape, r.Shape)
	}
	// Image k of the fake set is blank except 10+k at (k, k) and has
	// label k%10, so each composed image tells which sources it used
	// (TestComposeOverlapMax checks overlapping pixels).
	for n := range 50 {
		img := x.F32[n*36*36 : (n+1)*36*36]
		var lit [][3]int
		for p, v := range img {
			if v < 0 || v > 1 {
				t.Fatalf("pixel %v outside [0,1]", v)
			}
			if v != 0 {
				lit = append(lit, [3]int{p / 36, p % 36, int(v*255 + 0.5)})
			}
		}
		if len(lit) == 0 || len(lit) > 2 {
			t.Errorf("example %d: %d lit pixels, want the two marks (one if they coincide)", n, len(lit))
		}
		for _, px := range lit {
			row, col, v := px[0], px[1], px[2]
			switch {
			case row == v-10 && col == v-10 && l.I64[n] == int64((v-10)%10):
				// the left image's mark, at its own place
			case row == v-10+RightOffset && col == v-10+RightOffset && r.I64[n] == int64((v-10)%10):
				// the right image's mark, shifted by the offset
			default:
				t.Errorf("example %d (labels %d,%d): unexpected pixel %d at (%d,%d)", n, l.I64[n], r.I64[n], v, row, col)
			}
		}
	}

	again, _ := Compose(src, src, 50, 42)
	if !reflect.DeepEqual(out, again) {
		t.Error("same seed, different data")
	}
	prefix, _ := Compose(src, src, 10, 42)
	if !reflect.DeepEqual(prefix["x"].F32, out["x"].F32[:10*36*36]) || !reflect.DeepEqual(prefix["left"].I64, l.I64[:10]) {
		t.Error("the first 10 of 50 examples differ from 10 examples with the same seed")
	}
	other, _ := Compose(src, src, 50, 43)
	if reflect.DeepEqual(other["left"].I64, l.I64) && reflect.DeepEqual(other["right"].I64, r.I64) {
		t.Error("seeds 42 and 43 gave the same pairs")
	}
}

func TestComposeOverlapMax(t *testing.T) {
	full := func(v uint8) *Set {
		px := bytes.Repeat([]byte{v}, 28*28)
		return &Set{Images: &Images{N: 1, Rows: 28, Cols: 28, Pixels: px}, Labels: []uint8{v % 10}}
	}
	out, err := Compose(full(50), full(200), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	x := out["x"].F32
	at := func(r, c int) uint8 { return uint8(x[r*36+c]*255 + 0.5) }
	tests := []struct {
		r, c int
		want uint8
	}{
		{0, 0, 50}, {7, 27, 50}, {8, 8, 200}, {27, 27, 200}, {35, 35, 200}, {0, 35, 0}, {35, 0, 0}, {30, 5, 0},
	}
	for _, tc := range tests {
		if got := at(tc.r, tc.c); got != tc.want {
			t.Errorf("pixel (%d,%d) = %d, want %d", tc.r, tc.c, got, tc.want)
		}
	}
	if out["left"].I64[0] != 0 || out["right"].I64[0] != 0 {
		t.Errorf("labels %v %v", out["left"].I64, out["right"].I64)
	}
	if _, err := Compose(full(1), full(1), 0, 0); err == nil {
		t.Error("Compose with n=0 succeeded")
	}
	big := &Set{Images: &Images{N: 1, Rows: 30, Cols: 30, Pixels: make([]uint8, 900)}, Labels: []uint8{1}}
	if _, err := Compose(big, big, 1, 0); err == nil || !strings.Contains(err.Error(), "30x30") {
		t.Errorf("30x30 images: err = %v", err)
	}
}

// TestMNISTSource checks the override: a folder in $PARETONAV_MNIST_DIR is
// used, one that is not a folder is an error naming it, and without it the
// embedded files are read.
func TestMNISTSource(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(EnvMNISTDir, "")
	if src, err := MNISTSource(); err != nil || src != EmbeddedMNIST {
		t.Errorf("without $%s: %q, %v; want %q", EnvMNISTDir, src, err, EmbeddedMNIST)
	}
	t.Setenv(EnvMNISTDir, filepath.Join(empty, "nowhere"))
	if _, err := MNISTSource(); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("with $%s pointing nowhere: %v", EnvMNISTDir, err)
	}
	if _, err := LoadMNIST(Test); !errors.Is(err, ErrNotFound) {
		t.Errorf("LoadMNIST with $%s pointing nowhere: %v", EnvMNISTDir, err)
	}
	fakeSet(t, empty, "t10k", 3, 28)
	t.Setenv(EnvMNISTDir, empty)
	s, err := LoadMNIST(Test)
	if err != nil || s.Len() != 3 {
		t.Errorf("LoadMNIST from $%s (3 fake images): %v", EnvMNISTDir, err)
	}
	t.Setenv(EnvFashionDir, filepath.Join(empty, "nofashion"))
	if _, err := FashionDir(); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nofashion") {
		t.Errorf("with $%s pointing nowhere: %v", EnvFashionDir, err)
	}
}

// TestEmbeddedMNIST reads the MNIST files built into the package: the
// standard sizes, and the label counts published with MNIST's test set.
func TestEmbeddedMNIST(t *testing.T) {
	t.Setenv(EnvMNISTDir, "")
	for _, tc := range []struct {
		split Split
		n     int
	}{{Train, 60000}, {Test, 10000}} {
		s, err := LoadMNIST(tc.split)
		if err != nil {
			t.Fatal(err)
		}
		if s.Len() != tc.n || s.Images.Rows != 28 || s.Images.Cols != 28 {
			t.Errorf("%s: %d images of %dx%d, want %d of 28x28", tc.split, s.Len(), s.Images.Rows, s.Images.Cols, tc.n)
		}
		if tc.split != Test {
			continue
		}
		var count [10]int
		for _, l := range s.Labels {
			count[l]++
		}
		if want := [10]int{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}; count != want {
			t.Errorf("test label counts %v, want %v", count, want)
		}
	}
}

func TestMultiErrors(t *testing.T) {
	if _, err := Multi("cifar", Options{}); err == nil || !strings.Contains(err.Error(), "cifar") {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := Multi(MultiMNIST, Options{Split: "val"}); err == nil || !strings.Contains(err.Error(), "val") {
		t.Errorf("unknown split: %v", err)
	}
}

// requireSources skips t when the real MNIST or Fashion-MNIST files are
// missing, unless CI is set (CI installs both).
func requireSources(t *testing.T, kind Kind) {
	t.Helper()
	var err error
	if kind != MultiMNIST {
		_, err = FashionDir()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must have the sources: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

func TestMultiReal(t *testing.T) {
	tests := []struct {
		kind  Kind
		split Split
	}{
		{MultiMNIST, Train}, {MultiMNIST, Test}, {MultiFashion, Test}, {FashionMNIST, Train},
	}
	for _, tc := range tests {
		t.Run(string(tc.kind)+"/"+string(tc.split), func(t *testing.T) {
			requireSources(t, tc.kind)
			out, err := Multi(tc.kind, Options{Split: tc.split, Limit: 20, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			x := out["x"]
			if !reflect.DeepEqual(x.Shape, []int{20, 1, 36, 36}) || len(out["left"].I64) != 20 || len(out["right"].I64) != 20 {
				t.Fatalf("shapes %v %v %v", x.Shape, out["left"].Shape, out["right"].Shape)
			}
			var lo, hi float32 = 1, 0
			for _, v := range x.F32 {
				lo, hi = min(lo, v), max(hi, v)
			}
			if lo != 0 || hi != 1 {
				t.Errorf("pixels span [%v, %v], want [0, 1]", lo, hi)
			}
			labels := map[int64]bool{}
			for _, k := range []string{"left", "right"} {
				for _, v := range out[k].I64 {
					if v < 0 || v > 9 {
						t.Fatalf("%s label %d", k, v)
					}
					labels[v] = true
				}
			}
			if len(labels) < 5 {
				t.Errorf("only %d distinct labels in 40", len(labels))
			}
			// The corner the right item never reaches shows the left item
			// alone, and vice versa: both must carry ink somewhere.
			for n := range 20 {
				img := x.F32[n*1296 : (n+1)*1296]
				var leftOnly, rightOnly float32
				for r := range 36 {
					for c := range 36 {
						if r < 8 || c < 8 {
							leftOnly += img[r*36+c]
						}
						if r >= 28 || c >= 28 {
							rightOnly += img[r*36+c]
						}
					}
				}
				if leftOnly == 0 && rightOnly == 0 {
					t.Errorf("example %d: no ink outside the overlap", n)
				}
			}
		})
	}
}

func TestMultiRealMatchesSource(t *testing.T) {
	requireSources(t, FashionMNIST)
	out, err := Multi(FashionMNIST, Options{Split: Test, Limit: 3, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	fashion, err := LoadFashion(Test)
	if err != nil {
		t.Fatal(err)
	}
	mnist, err := LoadMNIST(Test)
	if err != nil {
		t.Fatal(err)
	}
	if fashion.Len() != 10000 || mnist.Len() != 10000 {
		t.Errorf("test sets hold %d and %d images, want 10000", fashion.Len(), mnist.Len())
	}
	want, err := Compose(fashion, mnist, 3, 9)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, want) {
		t.Error("Multi(FashionMNIST) differs from Compose(fashion, mnist)")
	}
}

// TestComposeLayout checks each layout's geometry on images of constant
// value: the left item (value 50) fills rows and columns 0..27, the right
// one (value 200) 28 rows and columns from its offset, the brighter value
// wins where they overlap, and the rest of the 36×36 canvas is blank.
func TestComposeLayout(t *testing.T) {
	full := func(v uint8) *Set {
		px := bytes.Repeat([]byte{v}, 28*28)
		return &Set{Images: &Images{N: 1, Rows: 28, Cols: 28, Pixels: px}, Labels: []uint8{v % 10}}
	}
	type px struct {
		r, c int
		want uint8
	}
	tests := []struct {
		layout  Layout
		pixels  []px
		overlap int // pixels where both items lie
		blank   int // pixels where neither does
	}{
		{LayoutOurs, []px{
			{0, 0, 50}, {7, 7, 50}, {8, 8, 200}, {7, 35, 0}, {8, 35, 200}, {27, 27, 200},
			{28, 8, 200}, {28, 7, 0}, {35, 35, 200}, {35, 0, 0}, {0, 35, 0},
		}, 20 * 20, 36*36 - (28*28 + 28*28 - 20*20)},
		{LayoutSener, []px{
			{0, 0, 50}, {5, 5, 50}, {6, 6, 200}, {5, 33, 0}, {6, 33, 200}, {27, 27, 200},
			{28, 6, 200}, {28, 5, 0}, {33, 33, 200}, {34, 34, 0}, {33, 34, 0}, {34, 10, 0},
			{35, 35, 0}, {35, 0, 0}, {0, 35, 0},
		}, 22 * 22, 36*36 - (28*28 + 28*28 - 22*22)},
	}
	for _, tc := range tests {
		t.Run(string(tc.layout), func(t *testing.T) {
			out, err := ComposeLayout(full(50), full(200), 1, 0, tc.layout)
			if err != nil {
				t.Fatal(err)
			}
			x := out["x"].F32
			at := func(r, c int) uint8 { return uint8(x[r*36+c]*255 + 0.5) }
			for _, p := range tc.pixels {
				if got := at(p.r, p.c); got != p.want {
					t.Errorf("pixel (%d,%d) = %d, want %d", p.r, p.c, got, p.want)
				}
			}
			// A pixel lies in both items when it shows 200 whichever item
			// carries it: the maximum of 50 and 200.
			swapped, err := ComposeLayout(full(200), full(50), 1, 0, tc.layout)
			if err != nil {
				t.Fatal(err)
			}
			const bright = float32(200) / 255
			var overlap, blank int
			for p, v := range x {
				if v == 0 {
					blank++
				}
				if v == bright && swapped["x"].F32[p] == bright {
					overlap++
				}
			}
			if overlap != tc.overlap || blank != tc.blank {
				t.Errorf("%d overlapping and %d blank pixels, want %d and %d", overlap, blank, tc.overlap, tc.blank)
			}
		})
	}
	if _, err := ComposeLayout(full(1), full(1), 1, 0, "center"); err == nil || !strings.Contains(err.Error(), `"center"`) {
		t.Errorf("unknown layout: err = %v", err)
	}
}

// TestComposeLayoutPairs checks the pairing: LayoutSener takes the left
// items in file order, wrapping around, and draws the right ones; the
// default draws both.
func TestComposeLayoutPairs(t *testing.T) {
	dir := t.TempDir()
	fakeSet(t, dir, "train", 7, 28)
	src, err := Load(dir, Train)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		layout   Layout
		wantLeft []int64 // nil: drawn, so not the file order
	}{
		{LayoutSener, []int64{0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1}},
		{LayoutOurs, nil},
	}
	order := []int64{0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1}
	for _, tc := range tests {
		t.Run(string(tc.layout), func(t *testing.T) {
			out, err := ComposeLayout(src, src, 16, 3, tc.layout)
			if err != nil {
				t.Fatal(err)
			}
			left, right := out["left"].I64, out["right"].I64
			if tc.wantLeft != nil && !reflect.DeepEqual(left, tc.wantLeft) {
				t.Errorf("left labels %v, want %v", left, tc.wantLeft)
			}
			if tc.wantLeft == nil && reflect.DeepEqual(left, order) {
				t.Errorf("left labels %v follow the file order", left)
			}
			if reflect.DeepEqual(right, order) {
				t.Errorf("right labels %v follow the file order", right)
			}
		})
	}
}
