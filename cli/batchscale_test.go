package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/batch"
	"github.com/paretonav/paretonav/job"
)

// seedJobsFile writes a jobs file of n tune jobs (one matrix over the
// seed) on one model and one data set of examples examples, and returns
// its path.
func seedJobsFile(tb testing.TB, n, examples int) string {
	tb.Helper()
	dir := tb.TempDir()
	model, data := tinyLeNet(tb, dir, examples)
	var seeds strings.Builder
	for i := range n {
		fmt.Fprintf(&seeds, "%d, ", i+1)
	}
	text := "defaults: {model: " + model + ", data: " + data + ", task: [\"left:nll:logp_left:left\", \"right:nll:logp_right:right\"], criterion: \"wd:2,2\", steps: 2}\n" +
		"jobs:\n  - name: s\n    matrix: {seed: [" + strings.TrimSuffix(seeds.String(), ", ") + "]}\n"
	file := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	return file
}

// TestBatchCheckMaxJobs: a jobs file at the limit, batch.MaxJobs jobs on
// one model and one data set, is checked with the data bound and checked
// against the model once (not once per job), and the check says on the
// error stream what it is doing: one line first, then a count every
// tenth of the jobs.
func TestBatchCheckMaxJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("checks 10,000 jobs")
	}
	file := seedJobsFile(t, batch.MaxJobs, 8)
	jobs, err := batch.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != batch.MaxJobs {
		t.Fatalf("%d jobs, want %d", len(jobs), batch.MaxJobs)
	}
	var log bytes.Buffer
	l := job.NewLoader()
	r := &batch.Runner{OutDir: filepath.Join(t.TempDir(), "out"), Resolve: batchResolver(file), Log: &log, Loader: l}
	if err := r.Check(jobs); err != nil {
		t.Fatal(err)
	}
	if n := l.DataChecks(); n != 1 {
		t.Errorf("the data were checked %d times for %d jobs, want once", n, len(jobs))
	}
	want := []string{"checking 10000 jobs: their keys, then the models and data of those to run…"}
	for k := 1000; k < 10000; k += 1000 {
		want = append(want, fmt.Sprintf("checked %d of 10000 jobs", k))
	}
	want = append(want, "checked 10000 of 10000 jobs: 0 failed their checks")
	if got := strings.Split(strings.TrimSpace(log.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", log.String(), strings.Join(want, "\n"))
	}
}

// BenchmarkBatchCheck checks jobs files of 1,000 and 10,000 tune jobs
// on one model and a 2,000-example data set (10 MB): the time per job
// should not grow with the number of jobs, nor with the data once it is
// checked.
func BenchmarkBatchCheck(b *testing.B) {
	for _, n := range []int{1000, batch.MaxJobs} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			file := seedJobsFile(b, n, 2000)
			jobs, err := batch.LoadFile(file)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				r := &batch.Runner{OutDir: filepath.Join(b.TempDir(), "out"), Resolve: batchResolver(file)}
				if err := r.Check(jobs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/job")
		})
	}
}
