package cli

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/paretonav/paretonav/job"
)

// TestBenchStep checks bench step's report on the LeNet fixture: as many
// step times as --steps, a median among them, shares of a step that add
// up to at most 1, the direction timed within each step as tune computes
// it, the memory fields filled, the load's phases within its time, the
// step's FLOPs and their rates beside a measured GEMM peak, and a CPU and
// an allocation
// profile written (gzip-compressed, as pprof writes them).
func TestBenchStep(t *testing.T) {
	dir := t.TempDir()
	fx, data, taskArgs := torchFixture(t, "lenet2_op13", dir, "d.npz", "x")
	prof, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	args := append([]string{"bench", "step", fx.ModelPath, "--data", data, "--batch", "4", "--steps", "3", "--json", "--cpuprofile", prof, "--memprofile", mem}, taskArgs...)
	out, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r job.BenchStepOutcome
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r.StepS) != 3 || r.Batch != 4 || r.Tasks != 2 || r.Params <= 0 {
		t.Fatalf("report %+v: expected 3 steps of batch 4, 2 tasks", r)
	}
	if r.LR != job.TuneLR {
		t.Errorf("the steps ran at lr %g; want tune's default %g", r.LR, job.TuneLR)
	}
	lo, hi := r.StepS[0], r.StepS[0]
	for _, s := range r.StepS {
		lo, hi = min(lo, s), max(hi, s)
	}
	if r.MedianS < lo || r.MedianS > hi || lo <= 0 {
		t.Errorf("median %g outside the step times %v", r.MedianS, r.StepS)
	}
	if sum := r.ForwardShare + r.BackwardShare + r.DirectionShare; r.ForwardShare <= 0 || r.BackwardShare <= 0 || r.DirectionShare <= 0 || sum > 1+1e-9 {
		t.Errorf("shares forward %g, backward %g, direction %g", r.ForwardShare, r.BackwardShare, r.DirectionShare)
	}
	// The direction is timed as tune computes it, a part of each step,
	// and each step is a part of tune's whole step.
	if len(r.DirectionS) != 3 || len(r.TuneStepS) != 3 {
		t.Fatalf("%d direction times, %d tune steps: want 3 each", len(r.DirectionS), len(r.TuneStepS))
	}
	for i := range r.StepS {
		if d := r.DirectionS[i]; d <= 0 || d > r.StepS[i] || r.StepS[i] > r.TuneStepS[i]+1e-9 {
			t.Errorf("step %d: direction %g s, step %g s, tune step %g s: want 0 < direction ≤ step ≤ tune step", i+1, d, r.StepS[i], r.TuneStepS[i])
		}
	}
	if r.TuneMedianS <= 0 || r.MaxOverMedian < 1 {
		t.Errorf("tune step median %g s, slowest over median %g", r.TuneMedianS, r.MaxOverMedian)
	}
	if r.PeakRSS <= 0 || r.LoadBuildS <= 0 || r.Memory == "" {
		t.Errorf("peak RSS %d, load %g s, memory %q", r.PeakRSS, r.LoadBuildS, r.Memory)
	}
	f := r.FLOPs
	if f.Direct <= 0 || f.Executed <= 0 || f.Executed > f.Direct || f.Forward <= 0 || f.Forward >= f.Direct || f.Winograd != 0 {
		t.Errorf("FLOPs %+v: want direct > forward > 0, 0 < executed ≤ direct, no Winograd in LeNet's convolutions", f)
	}
	if r.GFLOPSDirect != float64(f.Direct)/r.MedianS/1e9 || r.GFLOPSExecuted != float64(f.Executed)/r.MedianS/1e9 {
		t.Errorf("GFLOP/s %g direct, %g executed: want the counts over the median %g s", r.GFLOPSDirect, r.GFLOPSExecuted, r.MedianS)
	}
	if !(r.PeakGFLOPS > 0) || r.PeakShare != r.GFLOPSExecuted/r.PeakGFLOPS {
		t.Errorf("peak %g GFLOP/s, share %g: want a measured rate and the executed rate's share of it", r.PeakGFLOPS, r.PeakShare)
	}
	ph := r.LoadPhases
	if sum := ph.ModelS + ph.DataS + ph.PlanS; ph.ModelS <= 0 || ph.DataS <= 0 || ph.PlanS < 0 || sum > r.LoadBuildS+1e-9 {
		t.Errorf("load phases model %g s, data %g s, plan %g s: want positive and at most the load + build %g s", ph.ModelS, ph.DataS, ph.PlanS, r.LoadBuildS)
	}
	if _, err := os.Stat("/proc/self/io"); err == nil && ph.DiskBytes < 0 {
		t.Errorf("disk bytes of the load %d: /proc/self/io is there, want a count", ph.DiskBytes)
	}
	for _, p := range []string{prof, mem} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatalf("profile: %v", err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: not a pprof profile: %v", p, err)
		}
		if b, err := io.ReadAll(zr); err != nil || len(b) == 0 {
			t.Fatalf("%s: %d bytes, %v", p, len(b), err)
		}
		f.Close()
	}
}

// TestBenchStepTune checks bench step --tune on the LeNet fixture: a real
// tune of --steps+1 steps runs in the same process, its steps after the
// first are timed, the ratio is their median over the bench's whole steps
// (run at the tune's rate), its
// CPU profile is written, and the tune's temporary output is gone
// afterwards (no tuned model beside the input either).
func TestBenchStepTune(t *testing.T) {
	dir := t.TempDir()
	fx, data, taskArgs := torchFixture(t, "lenet2_op13", dir, "d.npz", "x")
	prof := filepath.Join(dir, "tune.prof")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	args := append([]string{"bench", "step", fx.ModelPath, "--data", data, "--batch", "4", "--steps", "3", "--json", "--tune", "--tune-cpuprofile", prof}, taskArgs...)
	out, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r job.BenchStepOutcome
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tu := r.Tune
	if tu == nil || len(tu.StepS) != 3 {
		t.Fatalf("tune timing %+v: want 3 timed steps", tu)
	}
	for _, s := range tu.StepS {
		if s <= 0 {
			t.Errorf("tune step times %v: want positive", tu.StepS)
		}
	}
	if tu.MedianS <= 0 || tu.Ratio != tu.MedianS/r.TuneMedianS {
		t.Errorf("tune median %g s, ratio %g; bench's median tune step %g s", tu.MedianS, tu.Ratio, r.TuneMedianS)
	}
	if r.LR != 1e-5 {
		t.Errorf("the bench steps ran at lr %g; want --tune-lr's 1e-5, the tune's", r.LR)
	}
	if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
		t.Errorf("tune CPU profile: %v", err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil || len(left) != 0 {
		t.Errorf("temporary folder after the run: %v %v, want empty", left, err)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(fx.ModelPath), "*_tuned*")); len(m) > 0 {
		t.Errorf("tuned files beside the model: %v", m)
	}
}
