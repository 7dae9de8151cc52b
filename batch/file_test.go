package batch

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseExpandsMatrix(t *testing.T) {
	jobs, err := Parse([]byte(`
defaults:
  model: m.onnx
  steps: 10
  matrix:
    seed: [1, 2]
jobs:
  - name: wd
    matrix:
      criterion: ["wd:1,2", "wd:2,1"]
  - kind: eval
    name: base
    matrix:
      seed: [7]
  - name: one
    steps: 5
    task: [a:ce:o:y, b:ce:p:z]
`))
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		name, kind, seed, crit, steps string
	}
	wants := []want{
		// Keys in sorted order, the last (seed) varying fastest.
		{"wd", "tune", "1", "wd:1,2", "10"}, {"wd", "tune", "2", "wd:1,2", "10"},
		{"wd", "tune", "1", "wd:2,1", "10"}, {"wd", "tune", "2", "wd:2,1", "10"},
		{"base", "eval", "7", "", "10"},
		{"one", "tune", "1", "", "5"}, {"one", "tune", "2", "", "5"},
	}
	if len(jobs) != len(wants) {
		t.Fatalf("%d jobs, want %d: %+v", len(jobs), len(wants), jobs)
	}
	ids := map[string]bool{}
	for i, w := range wants {
		j := jobs[i]
		got := want{j.Name, j.Kind, strings.Join(j.Keys["seed"], ","), strings.Join(j.Keys["criterion"], ","), strings.Join(j.Keys["steps"], ",")}
		if got != w || j.Index != i {
			t.Errorf("job %d: %+v (index %d), want %+v", i, got, j.Index, w)
		}
		if !strings.HasPrefix(j.ID, j.Name+"-") || len(j.ID) != len(j.Name)+17 {
			t.Errorf("job %d: ID %q, want %s-<16 hex digits>", i, j.ID, j.Name)
		}
		if ids[j.ID] {
			t.Errorf("job %d: ID %q repeated", i, j.ID)
		}
		ids[j.ID] = true
		if _, ok := j.Keys["kind"]; ok {
			t.Errorf("job %d: kind left among the keys", i)
		}
	}
	if got := strings.Join(jobs[5].Keys["task"], " "); got != "a:ce:o:y b:ce:p:z" {
		t.Errorf("task list: %q", got)
	}
	// The same file gives the same IDs; another value, another ID.
	again, err := Parse([]byte("defaults: {model: m.onnx, steps: 10, matrix: {seed: [1, 2]}}\njobs: [{name: wd, matrix: {criterion: [\"wd:1,2\", \"wd:2,1\"]}}]"))
	if err != nil {
		t.Fatal(err)
	}
	if again[0].ID != jobs[0].ID || again[3].ID != jobs[3].ID {
		t.Errorf("IDs changed between equal files: %s %s vs %s %s", again[0].ID, again[3].ID, jobs[0].ID, jobs[3].ID)
	}
}

func TestParseDefaultsOnly(t *testing.T) {
	jobs, err := Parse([]byte("defaults:\n  model: m.onnx\n  matrix:\n    lr: [0.1, 0.01]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].Kind != "tune" || jobs[1].Keys["lr"][0] != "0.01" || !strings.HasPrefix(jobs[0].Name, "tune-lr=0.1") {
		t.Errorf("got %+v", jobs)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{"default:\n  model: m.onnx\n", `key "default": the top level has only defaults:`},
		{"jobs: {name: a}\n", "jobs file: yaml: unmarshal errors"},
		{"jobs:\n  - kind: train\n", `jobs[0]: key kind: "train", want tune, front or eval`},
		{"jobs:\n  - matrix: {seed: []}\n", "jobs[0]: key matrix.seed: want a non-empty list"},
		{"jobs:\n  - matrix: [1, 2]\n", "jobs[0]: key matrix: want a mapping"},
		{"jobs:\n  - {name: a, lr: {x: 1}}\n", "jobs[0]: key lr: want a number, string or boolean"},
		{"jobs:\n  - {name: a, lr: }\n", "jobs[0]: key lr: no value"},
		{"jobs:\n  - {name: a, steps: 3}\n  - {name: a, steps: 3}\n", "jobs[0] and jobs[1] are the same job"},
		{"jobs:\n  - {matrix: {kind: [tune, eval]}}\n", "kind cannot vary"},
	} {
		_, err := Parse([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.file, err, tc.want)
		}
	}
}

func TestShardOfJob(t *testing.T) {
	// Job k belongs to shard k mod N: every job in exactly one shard.
	for _, n := range []int{1, 3, 5} {
		seen := make([]int, 11)
		for s := range n {
			for k := range seen {
				if inShard(k, s, n) {
					seen[k]++
				}
			}
		}
		for k, c := range seen {
			if c != 1 {
				t.Errorf("N=%d: job %d in %d shards", n, k, c)
			}
		}
	}
}

// TestParseBoundsMatrix: a short file whose matrix multiplies to more
// jobs than MaxJobs is refused before any job is expanded, naming the
// keys and the count.
func TestParseBoundsMatrix(t *testing.T) {
	list := func(n int) string {
		v := make([]string, n)
		for i := range v {
			v[i] = fmt.Sprint(i)
		}
		return "[" + strings.Join(v, ", ") + "]"
	}
	for _, tc := range []struct {
		name, file string
		wantErr    []string // substrings; nil: accepted
	}{
		{"three keys of 1000", "jobs:\n  - matrix:\n      a: " + list(1000) + "\n      b: " + list(1000) + "\n      c: " + list(1000) + "\n",
			[]string{"jobs[0]", "a (1000 values) × b (1000 values) × c (1000 values)", "1000000000 jobs", "10000"}},
		{"entries adding up", "jobs:\n  - matrix:\n      a: " + list(100) + "\n      b: " + list(60) + "\n  - name: x\n    matrix:\n      c: " + list(5000) + "\n",
			[]string{"jobs[1]", "c (5000 values)", "with the 6000 before them"}},
		{"exactly the bound", "jobs:\n  - matrix:\n      a: " + list(100) + "\n      b: " + list(100) + "\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs, err := Parse([]byte(tc.file))
			if tc.wantErr == nil {
				if err != nil || len(jobs) != MaxJobs {
					t.Fatalf("%d jobs, %v; want %d and no error", len(jobs), err, MaxJobs)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %d jobs; want an error", len(jobs))
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
