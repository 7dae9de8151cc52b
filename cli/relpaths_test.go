package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// TestConfigPathsRelativeToFile: relative paths in a --config file and in
// a jobs file are relative to that file's folder (Cargo.toml's rule), so
// a project runs from any folder; a path on the command line stays
// relative to the current folder. The test runs from another folder.
func TestConfigPathsRelativeToFile(t *testing.T) {
	proj := t.TempDir()
	model, _ := tinyLeNet(t, proj, 8) // proj/lenet2.onnx, proj/data.npz
	conf := filepath.Join(proj, "tune.yaml")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(conf, `data: data.npz
val: [data.npz]
task: ["left:nll:logp_left:left", "right:nll:logp_right:right"]
criterion: left+right
steps: 1
batch: 4
out: tuned.onnx
`)
	cwd := t.TempDir()
	t.Chdir(cwd)

	// --config: data, val and out beside the file.
	if printed, err := runCLI(t, "tune", model, "--config", conf); err != nil {
		t.Fatalf("tune --config from another folder: %v\n%s", err, printed)
	}
	if _, err := os.Stat(filepath.Join(proj, "tuned.onnx")); err != nil {
		t.Errorf("--out in the config file is not relative to its folder: %v", err)
	}

	// The command line wins and stays relative to the current folder.
	_, err := runCLI(t, "tune", model, "--config", conf, "--data", "here.npz", "--out", "here.onnx", "--force")
	if err == nil || !strings.Contains(err.Error(), "here.npz") || strings.Contains(err.Error(), proj) {
		t.Errorf("--data on the command line: error %v, want one about here.npz in the current folder", err)
	}

	// A jobs file: the model and the data beside it.
	jobs := filepath.Join(proj, "jobs.yaml")
	write(jobs, `defaults:
  model: lenet2.onnx
  data: data.npz
  task: ["left:nll:logp_left:left", "right:nll:logp_right:right"]
jobs:
  - {name: one, criterion: left+right, steps: 1, batch: 4}
  - {name: base, kind: eval, batch: 8}
`)
	if printed, err := runCLI(t, "batch", "run", jobs, "--out-dir", "runs"); err != nil {
		t.Fatalf("batch run from another folder: %v\n%s", err, printed)
	}
	if _, err := os.Stat(filepath.Join(cwd, "runs")); err != nil {
		t.Errorf("--out-dir on the command line is not relative to the current folder: %v", err)
	}
}

// TestResolvePaths: which values resolvePaths joins to the file's folder.
func TestResolvePaths(t *testing.T) {
	abs := filepath.Join(string(filepath.Separator), "data", "x.npz")
	for _, tc := range []struct {
		name string
		flag string
		vals []string
		want []string
	}{
		{"path flag", "out", []string{"m.onnx"}, []string{filepath.Join("proj", "m.onnx")}},
		{"absolute path kept", "out", []string{abs}, []string{abs}},
		{"data sources", "data", []string{"a.npz,x=x.npy", "y=" + abs, "images=train.idx:raw"},
			[]string{filepath.Join("proj", "a.npz") + ",x=" + filepath.Join("proj", "x.npy"), "y=" + abs, "images=" + filepath.Join("proj", "train.idx:raw")}},
		{"folder sources", "val", []string{"nyuv2:nyu/val", "folder:" + abs}, []string{"nyuv2:" + filepath.Join("proj", "nyu", "val"), "folder:" + abs}},
		{"not a path", "criterion", []string{"a+b"}, []string{"a+b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f ucli.Flag
			for _, g := range tuneCommand.Flags {
				if g.Names()[0] == tc.flag {
					f = g
				}
			}
			if f == nil {
				t.Fatalf("tune has no flag %q", tc.flag)
			}
			if got := resolvePaths(f, tc.vals, "proj"); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
