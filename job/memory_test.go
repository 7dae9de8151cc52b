package job

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models"
)

func TestParseBytes(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		err  bool
	}{
		{"12GB", 12e9, false},
		{"12g", 12e9, false},
		{"1.5 GiB", 3 << 29, false},
		{"800MB", 800e6, false},
		{"64MiB", 64 << 20, false},
		{"1000000", 1e6, false},
		{"2T", 2e12, false},
		{"", 0, true},
		{"-1GB", 0, true},
		{"0", 0, true},
		{"lots", 0, true},
	}
	for _, c := range cases {
		got, err := ParseBytes(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.err)
		}
		if err != nil && !strings.Contains(err.Error(), "--max-memory") {
			t.Errorf("ParseBytes(%q): error %q does not name the flag", c.in, err)
		}
	}
}

// TestSuggestedBatchFits: when --batch is refused, the batch the error
// suggests is accepted and one more is refused: it is the largest the
// estimate accepts (a proportional guess overshoots, since scratch grows
// with the batch too). The two-head LeNet on 2,000 examples, at limits
// that make batches of about 300 and 700 the largest.
func TestSuggestedBatchFits(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "lenet2.onnx")
	if err := models.WriteModel(model, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	tasks, err := ParseTasks([]string{"left:nll:logp_left:left", "right:nll:logp_right:right"})
	if err != nil {
		t.Fatal(err)
	}
	_, md, err := OpenModel(nil, model, tasks, backend.Options{BatchNorm: "frozen"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	lab := importer.NewInt64("left", []int{n}, make([]int64, n))
	ds := &finetune.Dataset{Arrays: map[string]*importer.Tensor{
		"x": importer.NewFloat32("x", []int{n, 1, 36, 36}, make([]float32, n*36*36)), "left": lab, "right": lab}}
	extra := TuneLoopBytes(len(md.Tasks()), md.NumParams())
	re := regexp.MustCompile(`--batch (\d+) fits`)
	for _, at := range []int{300, 700} {
		p, err := PlanMemory(md, ds, at, 1, extra, "1TB")
		if err != nil {
			t.Fatal(err)
		}
		limit := fmt.Sprint(p.Total())
		_, err = PlanMemory(md, ds, n, 1, extra, limit)
		if err == nil {
			t.Fatalf("limit %s: batch %d accepted", limit, n)
		}
		m := re.FindStringSubmatch(err.Error())
		if m == nil {
			t.Fatalf("limit %s: %v: no suggested batch", limit, err)
		}
		b, _ := strconv.Atoi(m[1])
		if _, err := PlanMemory(md, ds, b, 1, extra, limit); err != nil {
			t.Errorf("limit %s: suggested --batch %d refused: %v", limit, b, err)
		}
		if _, err := PlanMemory(md, ds, b+1, 1, extra, limit); err == nil {
			t.Errorf("limit %s: suggested --batch %d, but %d is accepted too", limit, b, b+1)
		}
		if b < at {
			t.Errorf("limit %s (the plan at batch %d): suggested --batch %d, below it", limit, at, b)
		}
	}
}

// TestAvailableMemory checks that the limit read from the machine is
// positive and says where it comes from.
func TestAvailableMemory(t *testing.T) {
	b, from, err := AvailableMemory()
	if err != nil {
		t.Fatal(err)
	}
	if b <= 0 || from == "" {
		t.Errorf("AvailableMemory() = %d bytes from %q", b, from)
	}
}

// TestGCLimit checks the Go runtime's soft memory limit derived from the
// plans: the expected peaks of the process's jobs (this one alone, or with
// others planned before it) plus 15%, at least 256 MiB more, never above
// the job's limit.
func TestGCLimit(t *testing.T) {
	step := backend.MemoryEstimate{Values: 4e9, Weights: 5e8, Jacobian: 4e8, Scratch: 1e8}
	cases := []struct {
		name   string
		step   backend.MemoryEstimate
		models int
		extra  int64
		before int64 // planned by earlier jobs of the process
		limit  int64
		want   int64
	}{
		{"15% above", step, 1, 0, 0, 20e9, 5.75e9},
		{"loop and models counted", step, 2, 1e9, 0, 20e9, 13.8e9},
		{"jobs planned before counted", step, 1, 0, 3e9, 20e9, 9.2e9},
		{"at least 256 MiB above", backend.MemoryEstimate{Values: 1e8}, 1, 0, 0, 20e9, 1e8 + 256<<20},
		{"capped by the limit", step, 1, 0, 0, 5.2e9, 5.2e9},
	}
	for _, c := range cases {
		p := &MemoryPlan{Step: c.step, Models: c.models, Extra: c.extra, Limit: c.limit}
		if got := p.gcLimit(c.before + p.Total()); got != c.want {
			t.Errorf("%s: gcLimit = %d, expected %d", c.name, got, c.want)
		}
	}
}

// TestGCPercent checks the GOGC a plan sets: its own percent for a heap
// whose growth at that percent is at least gcGarbageMin, a percent that
// allows gcGarbageMin of growth below it, and the garbage term of the
// plan counting what the percent allows.
func TestGCPercent(t *testing.T) {
	cases := []struct {
		name string
		live int64 // the step's values: the plan's whole live heap here
		base int   // the plan's gcPercent (0: gcPercent)
		want int
	}{
		{"large heap keeps 25%", 1e9, 0, 25},
		{"large heap keeps a whole run's 5%", 1e9, runGCPercent, 5},
		{"at the bound", 4 * gcGarbageMin, 0, 25},
		{"small heap grows by 16 MiB", 8 << 20, 0, 200},
		{"odd size rounds up", 3 << 20, 0, 534},
		{"tiny heap", 1 << 20, runGCPercent, 1600},
	}
	for _, c := range cases {
		p := &MemoryPlan{Step: backend.MemoryEstimate{Values: c.live}, Models: 1, gcPercent: c.base}
		if got := p.percentOf(p.live()); got != c.want {
			t.Errorf("%s: percent = %d, expected %d", c.name, got, c.want)
		}
		own := c.base
		if own == 0 {
			own = gcPercent
		}
		if got := p.percentOf(c.live + 1e9); got != own {
			t.Errorf("%s: percent beside another job's 1 GB = %d, expected the job's own %d", c.name, got, own)
		}
		if g, least := p.garbage(), min(c.live*int64(c.want)/100, gcHeadroomMin); g < least || g < min(gcGarbageMin, gcHeadroomMin) {
			t.Errorf("%s: garbage = %d, expected at least %d and gcGarbageMin", c.name, g, least)
		}
	}
}

// TestDiskReadBytes checks the storage-read counter behind bench step's
// load phases: a count where /proc/self/io exists, never decreasing.
func TestDiskReadBytes(t *testing.T) {
	a := diskReadBytes()
	if _, err := os.Stat("/proc/self/io"); err != nil {
		if a != -1 {
			t.Fatalf("diskReadBytes %d without /proc/self/io, want -1", a)
		}
		return
	}
	if _, err := os.ReadFile("/proc/self/status"); err != nil {
		t.Fatal(err)
	}
	if b := diskReadBytes(); a < 0 || b < a {
		t.Fatalf("diskReadBytes %d then %d: want a count that never decreases", a, b)
	}
}

// TestPlanForget checks that a plan forgotten (bench step --tune, before
// its tune is planned) takes its bytes back from the process's planned
// total, which the next plan's memory limit counts.
func TestPlanForget(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "lenet2.onnx")
	if err := models.WriteModel(model, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	tasks, err := ParseTasks([]string{"left:nll:logp_left:left", "right:nll:logp_right:right"})
	if err != nil {
		t.Fatal(err)
	}
	_, md, err := OpenModel(nil, model, tasks, backend.Options{BatchNorm: "frozen"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	lab := importer.NewInt64("left", []int{n}, make([]int64, n))
	ds := &finetune.Dataset{Arrays: map[string]*importer.Tensor{
		"x": importer.NewFloat32("x", []int{n, 1, 36, 36}, make([]float32, n*36*36)), "left": lab, "right": lab}}
	before := plannedBytes.Load()
	p, err := PlanMemory(md, ds, 32, 1, 0, "1TB")
	if err != nil {
		t.Fatal(err)
	}
	if got := plannedBytes.Load() - before; got <= 0 {
		t.Fatalf("a plan added %d bytes to the planned total, want its live bytes", got)
	}
	p.forget()
	if got := plannedBytes.Load(); got != before {
		t.Errorf("planned total after forget %d, want %d as before the plan", got, before)
	}
}
