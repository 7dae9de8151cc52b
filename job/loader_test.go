package job

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models"
)

// TestLoaderSharesFilesNotWeights loads one model for two jobs through
// a Loader: the file is parsed once (deleting it after the first load
// changes nothing), each job gets its own graph, and training one job's
// weights leaves the other's alone. Data arrays are shared as they are.
func TestLoaderSharesFilesNotWeights(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lenet2.onnx")
	if err := models.WriteModel(path, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "d.npz")
	x := importer.NewFloat32("x", []int{1, 1, 36, 36}, make([]float32, 36*36))
	if err := npz.Write(data, map[string]*importer.Tensor{"x": x}); err != nil {
		t.Fatal(err)
	}
	l := NewLoader()
	tasks, err := ParseTasks([]string{"left:nll:logp_left:left", "right:nll:logp_right:right"})
	if err != nil {
		t.Fatal(err)
	}
	_, a, err := OpenModel(l, path, tasks, backend.Options{BatchNorm: "frozen"})
	if err != nil {
		t.Fatal(err)
	}
	arr1, err := l.Arrays([]string{data})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(data); err != nil {
		t.Fatal(err)
	}
	_, b, err := OpenModel(l, path, tasks, backend.Options{BatchNorm: "frozen"})
	if err != nil {
		t.Fatalf("second load of a removed file: %v (the Loader did not keep it)", err)
	}
	arr2, err := l.Arrays([]string{data})
	if err != nil || arr2["x"] != arr1["x"] {
		t.Errorf("second Arrays: %v; same tensor %v", err, arr2["x"] == arr1["x"])
	}
	params := func(md *backend.Model) []float32 {
		p := make([]float32, md.NumParams())
		md.Params(p)
		return p
	}
	pa, pb := params(a), params(b)
	if len(pa) != len(pb) || len(pa) == 0 {
		t.Fatalf("%d and %d parameters", len(pa), len(pb))
	}
	moved := make([]float32, len(pa))
	for i := range moved {
		moved[i] = pa[i] + 1
	}
	if err := a.SetParams(moved); err != nil {
		t.Fatal(err)
	}
	if got := params(b); got[0] != pb[0] || got[len(got)-1] != pb[len(pb)-1] {
		t.Errorf("setting one job's weights changed the other's: %v → %v", pb[0], got[0])
	}
	if got := params(a); got[0] != moved[0] {
		t.Errorf("SetParams did not take: %v, want %v", got[0], moved[0])
	}

	// Without a Loader every call reads the file.
	if _, _, err := OpenModel(nil, path, tasks, backend.Options{BatchNorm: "frozen"}); err == nil {
		t.Error("nil Loader: no error for a removed file")
	}
}
