package cli

import (
	"path/filepath"
	"testing"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
)

// torchFixture loads ortcheck's PyTorch fixture name and writes its input
// (as the array inputArray) and targets to dir/file, an NPZ file. It
// returns the fixture, the data file's path and a --task flag for each of
// the fixture's tasks.
func torchFixture(t *testing.T, name, dir, file, inputArray string) (*ortcheck.Fixture, string, []string) {
	t.Helper()
	fx, err := ortcheck.LoadFixture(name)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, file)
	arrays := map[string]*importer.Tensor{inputArray: fx.Input}
	for k, v := range fx.Targets {
		arrays[k] = v
	}
	if err := npz.Write(data, arrays); err != nil {
		t.Fatal(err)
	}
	var taskArgs []string
	for _, s := range fx.Tasks {
		taskArgs = append(taskArgs, "--task", s)
	}
	return fx, data, taskArgs
}
