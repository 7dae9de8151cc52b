package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/batch"
	"github.com/paretonav/paretonav/importer"
)

// batchFixture writes a LeNet2 model, 16 examples and a jobs file (4
// tune jobs: 2 criteria × 2 seeds; one eval job; one tune job whose
// learning rate makes its losses NaN) into dir, and returns the jobs
// file's path.
func batchFixture(t *testing.T, dir string) string {
	t.Helper()
	model, data := tinyLeNet(t, dir, 16)
	jobs := filepath.Join(dir, "jobs.yaml")
	text := `defaults:
  model: ` + model + `
  data: ` + data + `
  task: ["left:nll:logp_left:left", "right:nll:logp_right:right"]
jobs:
  - name: wd
    steps: 4
    batch: 4
    matrix:
      criterion: ["wd:2,2.5", "wd:2.5,2"]
      seed: [1, 2]
  - {name: base, kind: eval, batch: 8}
  - {name: bad, criterion: "wd:2,2", steps: 4, batch: 4, lr: 1e9}
`
	if err := os.WriteFile(jobs, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return jobs
}

// jsonTail returns the JSON object that ends printed (progress lines
// come first).
func jsonTail(printed string) string {
	if i := strings.LastIndex(printed, "\n{"); i >= 0 {
		return printed[i+1:]
	}
	return printed
}

func batchStatusOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out, err := runCLI(t, "batch", "status", dir, "--json")
	if err != nil {
		t.Fatalf("batch status: %v\n%s", err, out)
	}
	var st batch.BatchStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("batch status --json: %v\n%s", err, out)
	}
	states := map[string]string{}
	for _, j := range st.Jobs {
		states[j.Name+" "+j.ID] = j.State
	}
	return states
}

func TestBatchRunSkipRetryCollect(t *testing.T) {
	dir := t.TempDir()
	jobsFile := batchFixture(t, dir)
	out := filepath.Join(dir, "out")
	printed, err := runCLI(t, "batch", "run", jobsFile, "--out-dir", out, "--workers", "2", "--json")
	if err == nil || !strings.Contains(err.Error(), "1 of 6 jobs failed") {
		t.Fatalf("batch run: error %v, want 1 of 6 jobs failed\n%s", err, printed)
	}
	jobs, err := batch.LoadFile(jobsFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		jd := filepath.Join(out, j.ID)
		_, resErr := os.Stat(filepath.Join(jd, batch.ResultFile))
		errText, errErr := os.ReadFile(filepath.Join(jd, batch.ErrorFile))
		switch {
		case j.Name == "bad":
			if resErr == nil || errErr != nil || !strings.Contains(string(errText), "job "+j.ID) || !strings.Contains(string(errText), "NaN") || !strings.HasSuffix(string(errText), "\n") {
				t.Errorf("%s: result %v, error.txt %q (%v); want no result and an error naming the job and the NaN, ending with a newline", j.ID, resErr, errText, errErr)
			}
		default:
			if resErr != nil || errErr == nil {
				t.Errorf("%s: result %v, error.txt %v; want a result and no error", j.ID, resErr, errErr)
			}
			if _, err := os.Stat(filepath.Join(jd, batch.ConfigFile)); err != nil {
				t.Errorf("%s: no resolved config: %v", j.ID, err)
			}
		}
		if j.Kind == "tune" && j.Name != "bad" {
			if _, err := importer.Load(filepath.Join(jd, batch.ModelFile)); err != nil {
				t.Errorf("%s: model: %v", j.ID, err)
			}
			var res batch.Result
			b, _ := os.ReadFile(filepath.Join(jd, batch.ResultFile))
			if err := json.Unmarshal(b, &res); err != nil || res.Steps != 4 || len(res.Losses) != 2 || res.F == nil {
				t.Errorf("%s: result %+v (%v), want 4 steps, 2 losses and F", j.ID, res, err)
			}
			if log, err := os.ReadFile(filepath.Join(jd, batch.LogFile)); err != nil || strings.Count(string(log), "\n") < 5 {
				t.Errorf("%s: log.jsonl has %d lines (%v), want the config and 4 steps", j.ID, strings.Count(string(log), "\n"), err)
			}
		}
	}

	// A rerun skips every done job and keeps the failed one failed.
	printed, err = runCLI(t, "batch", "run", jobsFile, "--out-dir", out, "--json")
	var sum batch.Summary
	if jerr := json.Unmarshal([]byte(jsonTail(printed)), &sum); jerr != nil {
		t.Fatalf("rerun --json: %v\n%s", jerr, printed)
	}
	if err == nil || sum.Done != 0 || sum.Skipped != 5 || sum.Failed != 1 {
		t.Errorf("rerun: %+v, err %v; want 5 skipped, 1 failed, an error", sum, err)
	}
	// --retry-failed reruns it (and it fails again).
	printed, err = runCLI(t, "batch", "run", jobsFile, "--out-dir", out, "--json", "--retry-failed")
	sum = batch.Summary{}
	json.Unmarshal([]byte(jsonTail(printed)), &sum)
	if err == nil || sum.Failed != 1 || sum.Skipped != 5 || sum.Done != 0 {
		t.Errorf("retry: %+v, err %v", sum, err)
	}

	states := batchStatusOf(t, out)
	nDone, nFailed := 0, 0
	for k, s := range states {
		switch {
		case s == batch.StateDone:
			nDone++
		case s == batch.StateFailed && strings.HasPrefix(k, "bad "):
			nFailed++
		default:
			t.Errorf("status: %s is %s", k, s)
		}
	}
	if nDone != 5 || nFailed != 1 {
		t.Errorf("status: %d done, %d failed; want 5, 1", nDone, nFailed)
	}

	if printed, err := runCLI(t, "batch", "collect", out); err != nil {
		t.Fatalf("collect: %v\n%s", err, printed)
	}
	f, err := os.Open(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := strings.Join(rows[0], ",")
	for _, col := range []string{"id,name,kind,status,batch,criterion", "lr,seed,steps,loss_left,loss_right,F,g,left/accuracy,right/accuracy,steps_taken,seconds,non_dominated"} {
		if !strings.Contains(head, col) {
			t.Errorf("results.csv header %q lacks %q", head, col)
		}
	}
	if strings.Contains(head, "model") || strings.Contains(head, ",task") {
		t.Errorf("results.csv header %q has keys that do not vary", head)
	}
	if len(rows) != 7 {
		t.Fatalf("results.csv: %d rows, want a header and 6 jobs", len(rows))
	}
	var col batch.Collection
	b, _ := os.ReadFile(filepath.Join(out, "results.json"))
	if err := json.Unmarshal(b, &col); err != nil {
		t.Fatal(err)
	}
	nd := 0
	for _, r := range col.Rows {
		if r.NonDominated {
			nd++
			if r.Status != batch.StateDone {
				t.Errorf("%s: %s but non-dominated", r.ID, r.Status)
			}
		}
	}
	if nd == 0 || strings.Join(col.Tasks, ",") != "left,right" {
		t.Errorf("results.json: %d non-dominated, tasks %v", nd, col.Tasks)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<svg class="panel"`, `<table id="jobs"`, `href="wd-`, "/model.onnx", "/log.jsonl"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, no := range []string{"http://", "https://", "<link", "src="} {
		if bytes.Contains(page, []byte(no)) {
			t.Errorf("report.html has %q: it must be self-contained", no)
		}
	}
}

func TestBatchInterruptedThenResumed(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	jobsFile := filepath.Join(dir, "jobs.yaml")
	text := "defaults: {model: " + model + ", data: " + data + ", task: [\"left:nll:logp_left:left\", \"right:nll:logp_right:right\"], criterion: \"wd:2,2\", steps: 6, batch: 4}\n" +
		"jobs: [{name: a}, {name: b, seed: 2}]\n"
	if err := os.WriteFile(jobsFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	batchTestRecorder = &cancelAfter{n: 2, cancel: cancel}
	defer func() { batchTestRecorder = nil }()
	var buf bytes.Buffer
	app := NewApp()
	app.Writer, app.ErrWriter = &buf, &buf
	err := app.RunContext(ctx, []string{"paretonav", "batch", "run", jobsFile, "--out-dir", out})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v, want interrupted\n%s", err, buf.String())
	}
	jobs, _ := batch.LoadFile(jobsFile)
	first := filepath.Join(out, jobs[0].ID)
	for _, f := range []string{batch.ResultFile, batch.ErrorFile, batch.RunningFile, batch.ModelFile} {
		if _, err := os.Stat(filepath.Join(first, f)); err == nil {
			t.Errorf("interrupted job left %s", f)
		}
	}
	if _, err := os.Stat(filepath.Join(first, batch.CheckpointFn)); err != nil {
		t.Fatalf("interrupted job: no checkpoint: %v\n%s", err, buf.String())
	}
	if st := batchStatusOf(t, out); st["a "+jobs[0].ID] != batch.StatePending || st["b "+jobs[1].ID] != batch.StatePending {
		t.Errorf("status after interruption: %v, want both pending", st)
	}

	batchTestRecorder = nil
	if printed, err := runCLI(t, "batch", "run", jobsFile, "--out-dir", out); err != nil {
		t.Fatalf("rerun: %v\n%s", err, printed)
	}
	var res batch.Result
	b, err := os.ReadFile(filepath.Join(first, batch.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil || !res.Resumed || res.Steps != 6 {
		t.Errorf("resumed job: %+v (%v), want resumed with 6 steps", res, err)
	}
	if _, err := os.Stat(filepath.Join(first, batch.CheckpointFn)); err == nil {
		t.Errorf("checkpoint left after the job finished")
	}
	// The log goes on: the first run's configuration, steps 1 and 2 and
	// its interruption, then the resumed run's configuration, steps 3 to 6
	// and its result.
	log, err := os.ReadFile(filepath.Join(first, batch.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var rec struct {
			Kind   string `json:"kind"`
			Step   int    `json:"step"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		switch rec.Kind {
		case "":
			kinds = append(kinds, fmt.Sprint(rec.Step))
		case "result":
			kinds = append(kinds, rec.Status)
		default:
			kinds = append(kinds, rec.Kind)
		}
	}
	if got, want := strings.Join(kinds, " "), "config 1 2 Interrupted config 3 4 5 6 StepLimit"; got != want {
		t.Errorf("resumed job's log: %s, want %s", got, want)
	}
}

func TestBatchValidation(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	head := "defaults: {model: " + model + ", data: " + data + ", task: [\"left:nll:logp_left:left\", \"right:nll:logp_right:right\"], criterion: \"wd:2,2\", steps: 2}\n"
	for _, tc := range []struct {
		name, jobs, want string
	}{
		{"unknown key", "jobs: [{name: x, stpes: 3}]", `key "stpes" is not a flag of "tune"`},
		{"bad criterion", "jobs: [{name: x, criterion: \"wd:1\"}]", "--criterion"},
		{"missing file", "jobs: [{name: x, data: nowhere.npz}]", "nowhere.npz"},
		{"task not in model", "jobs: [{name: x, task: [\"left:nll:logp_middle:left\"]}]", "logp_middle"},
		{"reserved key", "jobs: [{name: x, out: y.onnx}]", "key out: set by batch"},
		{"bad value", "jobs: [{name: x, steps: many}]", `key "steps"`},
		{"eval without data", "jobs: [{name: x, kind: eval, data: []}]", "job x-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobsFile := filepath.Join(t.TempDir(), "jobs.yaml")
			os.WriteFile(jobsFile, []byte(head+tc.jobs+"\n"), 0o644)
			out := filepath.Join(t.TempDir(), "out")
			_, err := runCLI(t, "batch", "run", jobsFile, "--out-dir", out)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "job x-") {
				t.Errorf("error %v, want one naming job x and containing %q", err, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s created although validation failed", out)
			}
		})
	}
}

func TestBatchFrontJobs(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	jobsFile := filepath.Join(dir, "jobs.yaml")
	text := "jobs:\n" +
		"  - {name: synth, kind: front, problem: exp2, models: 3, steps: 50}\n" +
		"  - {name: onnx, kind: front, model: " + model + ", data: " + data + ", task: [\"left:nll:logp_left:left\", \"right:nll:logp_right:right\"], models: 2, steps: 2, batch: 4}\n"
	if err := os.WriteFile(jobsFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if printed, err := runCLI(t, "batch", "run", jobsFile, "--out-dir", out); err != nil {
		t.Fatalf("batch run: %v\n%s", err, printed)
	}
	jobs, _ := batch.LoadFile(jobsFile)
	for _, j := range jobs {
		var res batch.Result
		b, err := os.ReadFile(filepath.Join(out, j.ID, batch.ResultFile))
		if err == nil {
			err = json.Unmarshal(b, &res)
		}
		if err != nil {
			t.Fatalf("%s: %v", j.ID, err)
		}
		wantModels := map[string]int{"synth": 0, "onnx": 2}[j.Name]
		nModels := 0
		for k, f := range res.Files {
			if strings.HasPrefix(k, "model_") {
				nModels++
				if _, err := importer.Load(filepath.Join(out, f)); err != nil {
					t.Errorf("%s: %s: %v", j.ID, f, err)
				}
			}
		}
		if nModels != wantModels || res.Metrics["front_non_dominated"] < 1 || len(res.Tasks) != 2 {
			t.Errorf("%s: %d model files (want %d), metrics %v, tasks %v", j.ID, nModels, wantModels, res.Metrics, res.Tasks)
		}
		for _, f := range []string{"report.json", "front.csv", "front.png", batch.LogFile} {
			if _, err := os.Stat(filepath.Join(out, j.ID, f)); err != nil {
				t.Errorf("%s: %v", j.ID, err)
			}
		}
	}
}

// TestBatchSlurmChecksFirst: batch slurm checks every job (here a
// criterion over a task the model lacks) before writing the script, and
// otherwise writes it, its log folder and jobs.json, printing the sbatch
// line.
func TestBatchSlurmChecksFirst(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	head := "defaults: {model: " + model + ", data: " + data + ", task: [\"left:nll:logp_left:left\", \"right:nll:logp_right:right\"], steps: 2}\n"
	for _, tc := range []struct {
		crit, want string
	}{{"wd:2,2", ""}, {"middle+left", "--criterion"}} {
		jobsFile := filepath.Join(t.TempDir(), "jobs.yaml")
		os.WriteFile(jobsFile, []byte(head+"jobs: [{name: x, criterion: \""+tc.crit+"\"}]\n"), 0o644)
		out := filepath.Join(t.TempDir(), "out")
		printed, err := runCLI(t, "batch", "slurm", jobsFile, "--out-dir", out, "--shards", "2")
		_, statErr := os.Stat(filepath.Join(out, "batch.sbatch"))
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "job x-") || statErr == nil {
				t.Errorf("%s: error %v, script %v; want an error naming job x and %s, and no script", tc.crit, err, statErr, tc.want)
			}
			continue
		}
		if err != nil || statErr != nil || !strings.Contains(printed, "sbatch "+filepath.Join(out, "batch.sbatch")) {
			t.Errorf("%s: %v, script %v, printed %q", tc.crit, err, statErr, printed)
		}
		for _, p := range []string{batch.SlurmLogDir, batch.ManifestFile} {
			if _, err := os.Stat(filepath.Join(out, p)); err != nil {
				t.Errorf("%v", err)
			}
		}
	}
}

// TestBatchSlurmExtraKeepsCommas: each --extra is one #SBATCH line, taken
// whole: a Slurm option whose value lists several items with commas is
// not cut into lines.
func TestBatchSlurmExtraKeepsCommas(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	jobsFile := filepath.Join(dir, "jobs.yaml")
	os.WriteFile(jobsFile, []byte("defaults: {model: "+model+", data: "+data+", task: [\"left:nll:logp_left:left\", \"right:nll:logp_right:right\"], steps: 2}\njobs: [{name: x, criterion: \"wd:2,2\"}]\n"), 0o644)
	out := filepath.Join(dir, "out")
	if _, err := runCLI(t, "batch", "slurm", jobsFile, "--out-dir", out, "--shards", "1",
		"--extra", "--mail-type=END,FAIL", "--extra", "--gres=gpu:1"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "batch.sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	var sbatch []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "#SBATCH --mail") || strings.HasPrefix(l, "#SBATCH --gres") || l == "#SBATCH FAIL" {
			sbatch = append(sbatch, l)
		}
	}
	if want := []string{"#SBATCH --mail-type=END,FAIL", "#SBATCH --gres=gpu:1"}; !slices.Equal(sbatch, want) {
		t.Errorf("#SBATCH lines %q; want %q", sbatch, want)
	}
}
