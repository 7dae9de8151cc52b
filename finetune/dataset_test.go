package finetune_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
)

func TestDatasetValidate(t *testing.T) {
	x := importer.NewFloat32("x", []int{4, 2}, make([]float32, 8))
	for _, tc := range []struct {
		name   string
		arrays finetune.Batch
		want   []string // substrings of the error; nil: valid
	}{
		{"empty", nil, nil},
		{"consistent", finetune.Batch{"x": x, "y": importer.NewInt64("y", []int{4}, make([]int64, 4))}, nil},
		{"mismatch", finetune.Batch{"x": x, "y": importer.NewInt64("y", []int{3}, make([]int64, 3))}, []string{`"x" (4 examples)`, `"y" (3 examples)`}},
		{"scalar", finetune.Batch{"s": importer.NewFloat32("s", nil, []float32{1})}, []string{`"s"`, "scalar"}},
		{"short data", finetune.Batch{"x": {Name: "x", Type: importer.Float32, Shape: []int{4, 2}, F32: make([]float32, 7)}}, []string{`"x"`, "7 values"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := finetune.NewDataset(tc.arrays)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
}

func TestDatasetBatches(t *testing.T) {
	d := regressionData(10)
	for _, tc := range []struct {
		size  int
		sizes []int
	}{{3, []int{3, 3, 3, 1}}, {5, []int{5, 5}}, {32, []int{10}}} {
		b := d.Batches(7, 2, tc.size)
		var got []int
		var all []int
		for _, idx := range b {
			got = append(got, len(idx))
			all = append(all, idx...)
		}
		if !slices.Equal(got, tc.sizes) {
			t.Errorf("size %d: batch sizes %v, want %v", tc.size, got, tc.sizes)
		}
		sort.Ints(all)
		for i, v := range all {
			if v != i {
				t.Fatalf("size %d: batches %v are not a permutation of 0..9", tc.size, b)
			}
		}
	}
	if a, b := d.Batches(7, 2, 3), d.Batches(7, 2, 3); !slices.EqualFunc(a, b, slices.Equal) {
		t.Errorf("same seed and epoch gave %v and %v", a, b)
	}
	if a, b := d.Batches(7, 2, 10), d.Batches(7, 3, 10); slices.Equal(a[0], b[0]) {
		t.Errorf("epochs 2 and 3 have the same order %v", a[0])
	}
	if b := (&finetune.Dataset{}).Batches(1, 0, 4); len(b) != 1 || b[0] != nil {
		t.Errorf("empty dataset: batches %v, want one empty batch", b)
	}
}

func TestDatasetSubset(t *testing.T) {
	d := regressionData(5)
	b := d.Subset([]int{4, 1})
	x := d.Arrays["x"].F32
	want := append(append([]float32(nil), x[12:15]...), x[3:6]...)
	if got := b["x"]; !slices.Equal(got.F32, want) || !slices.Equal(got.Shape, []int{2, 3}) {
		t.Errorf("Subset x = %v %v, want %v [2 3]", got.Shape, got.F32, want)
	}
	b["x"].F32[0] = 99
	if x[12] == 99 {
		t.Error("Subset shares storage with the dataset")
	}
	if s := d.Slice(1, 3)["y0"]; !slices.Equal(s.F32, d.Arrays["y0"].F32[1:3]) {
		t.Errorf("Slice(1,3) y0 = %v, want %v", s.F32, d.Arrays["y0"].F32[1:3])
	}
}

func TestRunDatasetMismatch(t *testing.T) {
	d := regressionData(6)
	d.Arrays["y1"] = importer.NewFloat32("y1", []int{5}, make([]float32, 5))
	s := finetune.Settings{Method: gd{}}
	_, err := finetune.Run(t.Context(), &regression{theta: make([]float32, 3)}, d, nil, &s, nil)
	if err == nil || !strings.Contains(err.Error(), `"y1" (5 examples)`) || !strings.Contains(err.Error(), "training set") {
		t.Errorf("error %v, want one naming array y1 of the training set", err)
	}
}
