package cli_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchPlan(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"budget small", "multimnist, multifashion, fashionmnist", "3 seeds",
			"20480 training and 1000 test pairs", "27000 in all", "expected duration ≈ 25m23s with 2 workers"}},
		{[]string{"--budget", "medium", "--ablation"}, []string{"budget medium", "5 seeds", "8192 training and 2048 test pairs",
			"52800 in all", "expected duration ≈ 52m0s with 2 workers", "ablation on multimnist", "in all ≈ 1h4m32s"}},
	} {
		out, err := runCLI(t, append([]string{"bench", "multimnist", "--plan", "--workers", "2"}, tc.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("%v: plan lacks %q:\n%s", tc.args, want, out)
			}
		}
		if (len(tc.args) > 0) != strings.Contains(out, "ablation") {
			t.Errorf("%v: the plan's ablation lines:\n%s", tc.args, out)
		}
	}
}

// TestBenchTiny runs the whole benchmark at the tiny budget on MultiMNIST
// (generated from MNIST, skipped where MNIST is not installed) and checks
// the files and the table.
func TestBenchTiny(t *testing.T) {
	dir := t.TempDir()
	out, err := runCLI(t, "bench", "multimnist", "--budget", "tiny", "--datasets", "multimnist", "--out-dir", dir, "--json", "--workers", "2")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Table map[string]map[string]map[string]struct {
			Mean   *float64  `json:"mean"`
			Values []float64 `json:"values"`
			PNGvs  *struct {
				T, P *float64
				DF   float64
			} `json:"png_vs"`
		} `json:"table"`
		Runs []struct {
			Points []json.RawMessage `json:"points"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if len(r.Runs) != 2 || len(r.Runs[0].Points) != 40 {
		t.Fatalf("%d runs (want 2 seeds), %d points in the first (want 4 methods × 5 models × 2 checkpoints)", len(r.Runs), len(r.Runs[0].Points))
	}
	for _, m := range []string{"linear", "mgd", "epo", "png"} {
		c, ok := r.Table["multimnist"][m]["hv_acc"]
		if !ok || c.Mean == nil || len(c.Values) != 2 {
			t.Errorf("table multimnist/%s/hv_acc: %+v", m, c)
		}
		if (m != "png") != (c.PNGvs != nil && c.PNGvs.DF == 1) {
			t.Errorf("%s: t-test %+v, want one (df 1) for each baseline only", m, c.PNGvs)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil || !strings.Contains(string(md), "| png |") || !strings.Contains(string(md), "Paired t-test") {
		t.Errorf("results.md: %v\n%s", err, md)
	}
	for _, f := range []string{"results.json", "data/multimnist_train_64_seed0.npz", "data/multimnist_test_32_seed0.npz"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestBenchErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--budget", "huge", "--plan"}, "--budget"},
		{[]string{"--seeds", "1", "--plan"}, "--seeds"},
		{[]string{"--datasets", "cifar", "--plan"}, "--datasets"},
		{[]string{"--workers", "0", "--plan"}, "--workers"},
		{[]string{"--threshold-cap", "-1", "--plan"}, "--threshold-cap"},
		{[]string{"--layout", "center", "--plan"}, "--layout"},
		{[]string{"--max-tradeoff", "-1", "--plan"}, "--max-tradeoff"},
		{[]string{"--energy-scale", "unit", "--plan"}, "--energy-scale"},
		{[]string{"--ablation", "--datasets", "multifashion", "--plan"}, "--ablation"},
	} {
		_, err := runCLI(t, append([]string{"bench", "multimnist"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench multimnist %v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}

// TestBenchRescoreCommitted rescores committed benchmark results: the
// table stored in each file must be what this version's metrics compute
// from its checkpoints (rescore it after changing them), and the command
// refuses to overwrite its input. The files under testdata/rescore are
// runs of earlier versions of PNG's update, kept only as inputs to the
// metrics (see testdata/rescore/README.md).
func TestBenchRescoreCommitted(t *testing.T) {
	for _, tc := range []struct {
		file  string
		cells int // datasets × methods × 4 metrics
	}{
		{"testdata/rescore/medium-multimnist.json", 1 * 4 * 4},
		{"testdata/rescore/small.json", 3 * 3 * 4},
		{"testdata/rescore/medium-multimnist-ablation.json", 1 * 4 * 4},
		{"testdata/rescore/medium-fashion.json", 2 * 4 * 4},
		{"testdata/rescore/medium-paper-update.json", 1 * 4 * 4},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			rescoreCommitted(t, tc.file, tc.cells)
		})
	}
}

// rescoreCommitted rescores a committed results file and checks that
// every one of its table cells comes out as stored, and that rescore
// refuses to write over its input.
func rescoreCommitted(t *testing.T, committed string, cells int) {
	raw, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	var stored struct {
		Table map[string]map[string]map[string]struct {
			Mean *float64 `json:"mean"`
		} `json:"table"`
	}
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := runCLI(t, "bench", "rescore", committed, "--out-dir", dir); err != nil {
		t.Fatal(err)
	}
	res, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var again struct {
		Table map[string]map[string]map[string]struct {
			Mean *float64 `json:"mean"`
		} `json:"table"`
	}
	if err := json.Unmarshal(res, &again); err != nil {
		t.Fatal(err)
	}
	n := 0
	for ds, byMethod := range stored.Table {
		for m, byMetric := range byMethod {
			for metric, c := range byMetric {
				got := again.Table[ds][m][metric].Mean
				if c.Mean == nil || got == nil || math.Abs(*got-*c.Mean) > 1e-12 {
					t.Errorf("%s %s %s: rescored %v, stored %v", ds, m, metric, got, c.Mean)
				}
				n++
			}
		}
	}
	if n != cells {
		t.Errorf("%d table cells, want %d", n, cells)
	}
	if _, err := runCLI(t, "bench", "rescore", filepath.Join(dir, "results.json"), "--out-dir", dir); err == nil || !strings.Contains(err.Error(), "holds the input") {
		t.Errorf("rescore into the input's folder: %v", err)
	}
}
