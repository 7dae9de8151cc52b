package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models/datasets"
)

// requireDataSources skips t when MNIST or Fashion-MNIST is missing,
// unless CI is set (CI installs both).
func requireDataSources(t *testing.T) {
	t.Helper()
	_, err := datasets.FashionDir()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must have the MNIST sources: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

func TestDataCommand(t *testing.T) {
	requireDataSources(t)
	dir := t.TempDir()
	tests := []struct {
		kind   string
		split  string
		layout string // "" leaves --layout out
	}{
		{"multimnist", "train", ""}, {"multifashion", "test", ""}, {"fashionmnist", "test", ""},
		{"multimnist", "train", "sener"}, {"fashionmnist", "test", "sener"},
	}
	for _, tc := range tests {
		t.Run(tc.kind+"/"+tc.split+"/"+tc.layout, func(t *testing.T) {
			path := filepath.Join(dir, tc.kind+"_"+tc.split+"_"+tc.layout+".npz")
			args := []string{"data", tc.kind, "--out", path, "--split", tc.split, "--limit", "12", "--seed", "4"}
			layout := datasets.LayoutOurs
			if tc.layout != "" {
				args = append(args, "--layout", tc.layout)
				layout = datasets.Layout(tc.layout)
			}
			out, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, w := range []string{tc.kind + " " + tc.split + ", layout " + string(layout) + ", 12 examples (seed 4)", "x [12,1,36,36] float", "left [12] int64", "right [12] int64"} {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			got, err := npz.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := datasets.Multi(datasets.Kind(tc.kind), datasets.Options{Split: datasets.Split(tc.split), Limit: 12, Seed: 4, Layout: layout})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s holds other arrays than datasets.Multi returns", path)
			}
			if got["left"].Type != importer.Int64 || got["x"].Type != importer.Float32 {
				t.Errorf("types %v %v, want int64 labels and float32 images", got["left"].Type, got["x"].Type)
			}
			if _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), "--force") {
				t.Errorf("overwrite without --force: err = %v", err)
			}
			if _, err := runCLI(t, append(args, "--force", "--compress=false")...); err != nil {
				t.Errorf("overwrite with --force: %v", err)
			}
		})
	}
}

func TestDataCommandJSON(t *testing.T) {
	requireDataSources(t)
	path := filepath.Join(t.TempDir(), "d.npz")
	out, err := runCLI(t, "data", "multimnist", "--out", path, "--split", "test", "--limit", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var s dataSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("--json printed %q: %v", out, err)
	}
	want := dataSummary{Dataset: "multimnist", Split: "test", Examples: 3, Seed: 1, Layout: "ours", Out: path, Bytes: s.Bytes, // --seed defaults to 1 everywhere
		Arrays: []string{"left [3] int64", "right [3] int64", "x [3,1,36,36] float"}}
	if !reflect.DeepEqual(s, want) || s.Bytes <= 0 {
		t.Errorf("summary %+v, want %+v", s, want)
	}
}

func TestDataCommandErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "d.npz")
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"data", "multimnist", "--out", out, "--split", "val"}, `--split "val"`},
		{[]string{"data", "multimnist", "--out", out, "--limit", "-1"}, "--limit -1"},
		{[]string{"data", "multimnist", "--out", out, "--layout", "center"}, `--layout "center"`},
		{[]string{"data", "multimnist"}, "out"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			_, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
	t.Setenv(datasets.EnvFashionDir, filepath.Join(dir, "nofashion"))
	if _, err := runCLI(t, "data", "multifashion", "--out", out, "--limit", "2"); err == nil || !strings.Contains(err.Error(), "nofashion") {
		t.Errorf("missing Fashion-MNIST: err = %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed command left %s behind", out)
	}
}

// TestBenchDataLayout: the benchmark's datasets follow --layout, and the
// cache keeps the default's file name and names any other layout, so a
// cache of one layout is never read for another.
func TestBenchDataLayout(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		layout datasets.Layout
		file   string
	}{
		{datasets.LayoutOurs, "multimnist_test_5_seed0.npz"},
		{datasets.LayoutSener, "multimnist_test_5_seed0_sener.npz"},
	}
	for _, tc := range tests {
		t.Run(string(tc.layout), func(t *testing.T) {
			got, err := benchData(dir, "multimnist", "test", 5, tc.layout)
			if err != nil {
				t.Fatal(err)
			}
			want, err := datasets.Multi(datasets.MultiMNIST, datasets.Options{Split: datasets.Test, Limit: 5, Seed: benchDataSeed, Layout: tc.layout})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("layout %s: benchData differs from datasets.Multi", tc.layout)
			}
			cached, err := npz.Read(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatalf("cache: %v", err)
			}
			if !reflect.DeepEqual(cached, want) {
				t.Errorf("cache %s holds other arrays", tc.file)
			}
		})
	}
}
