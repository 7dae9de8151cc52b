package job

import (
	"bufio"
	"fmt"
	"math/big"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
)

// MemoryPlan is the memory a job expects to need at its peak and what it
// may use, resolved before its first step.
type MemoryPlan struct {
	Step   backend.MemoryEstimate // one step of one model at the job's batch
	Models int                    // models held at once (front: --models)
	Extra  int64                  // per model: the loop's own vectors (θ, direction, optimizer state)
	// Lent is, per model, the loop's vectors that live only between two
	// evaluations and are lent from the step's pool of activation buffers
	// (finetune.ScratchLender): they count only where they outgrow the
	// step's activations (Step.Values).
	Lent int64
	Data int64 // the data sets' arrays held in memory (once, whatever Models)
	// Process is what the process held when the plan was made beyond the
	// data and the models' weights: the program and Go's runtime, the
	// model files as read and decoded, the graphs built so far.
	Process int64
	// Report is the forward values of one pass that reads the outputs
	// (the task metrics of the report passes) at the batch
	// (backend.Model.ForwardBytes); the plan counts what they outgrow the
	// step's activations by (reportBytes).
	Report int64
	// GC is the garbage the heap may hold at its peak beside the live
	// values: the Go runtime collects when the heap has grown by
	// gcPercent since the last collection, or nears GCLimit, whichever
	// comes first.
	GC        int64
	Limit     int64  // bytes the job may use
	LimitFrom string // where Limit comes from
	// GCLimit is the Go runtime's soft memory limit PlanMemory sets: the
	// expected peaks of the jobs planned in this process (plannedBytes)
	// plus gcHeadroom of them, at most Limit.
	GCLimit int64
	// gcPercent is the heap growth between collections the job runs
	// with (gcPercent or runGCPercent; 0: gcPercent).
	gcPercent int
	// planned is what the plan added to plannedBytes (forget).
	planned int64
}

// forget takes the plan's bytes back from those of the jobs planned in
// this process, for a job whose step is over before another is planned
// in it (bench step --tune): the next plan then sets the runtime's limits
// as for a process of its own.
func (p *MemoryPlan) forget() {
	plannedBytes.Add(-p.planned)
	p.planned = 0
}

// Total is the expected peak in bytes.
func (p *MemoryPlan) Total() int64 {
	return p.live() + p.GC + p.Process
}

// live is the plan's heap: what the step, the loop, the report pass and
// the data hold.
func (p *MemoryPlan) live() int64 {
	return int64(p.Models)*(p.Step.Total()+p.loopBytes()+p.reportBytes()) + p.Data
}

// reportBytes is what the report pass adds to the step per model: its
// values draw from the step's pool, whose limit is the larger of the two
// programs' pooled peaks (backend's bufPool.fit), so only what its values
// outgrow the step's by. (Counting it whole put the full MTAN's plan at
// 288×384 645 MB above a peak it never reached.)
func (p *MemoryPlan) reportBytes() int64 { return max(0, p.Report-p.Step.Values) }

// loopBytes is what the loop adds to the step per model: its own vectors
// and the lent ones the step's pool has no room for.
func (p *MemoryPlan) loopBytes() int64 {
	return p.Extra + max(0, p.Lent-p.Step.Values)
}

// String is the line tune, eval and front print before the first step.
func (p *MemoryPlan) String() string {
	if p == nil {
		return "expected peak memory: not estimated"
	}
	s := fmt.Sprintf("expected peak memory %s", backend.FormatBytes(p.Total()))
	if p.Models > 1 {
		s += fmt.Sprintf(" for %d models, each", p.Models)
	}
	s += fmt.Sprintf(": step %s%s", p.Step, p.loop())
	s += fmt.Sprintf("; limit %s (%s)", backend.FormatBytes(p.Limit), p.LimitFrom)
	if p.GCLimit > 0 && p.GCLimit < p.Limit {
		s += fmt.Sprintf(", garbage collected above %s", backend.FormatBytes(p.GCLimit))
	}
	return s
}

// loop is ", loop SIZE" when the loop holds memory beside the step, and
// ", data SIZE" for the data sets.
func (p *MemoryPlan) loop() string {
	s := ""
	if l := p.loopBytes(); l != 0 || p.Lent != 0 {
		s = ", loop " + backend.FormatBytes(l)
		if p.Lent != 0 {
			s += fmt.Sprintf(" (and %s lent from the activations' pool)", backend.FormatBytes(min(p.Lent, p.Step.Values)))
		}
	}
	if p.Data != 0 {
		s += ", data " + backend.FormatBytes(p.Data)
	}
	if r := p.reportBytes(); r != 0 {
		s += ", report pass " + backend.FormatBytes(r)
	} else if p.Report != 0 {
		s += ", report pass in the step's buffers"
	}
	if p.GC != 0 {
		s += ", garbage " + backend.FormatBytes(p.GC)
	}
	if p.Process != 0 {
		s += ", process " + backend.FormatBytes(p.Process)
	}
	return s
}

// ResolveBudget is the memory a job may use: --max-memory when given
// (maxMemory, e.g. "12GB"), else what the machine or cgroup allows
// (AvailableMemory). Models and data are read within it.
func ResolveBudget(maxMemory string) (importer.Budget, error) {
	if maxMemory != "" {
		b, err := ParseBytes(maxMemory)
		if err != nil {
			return importer.Budget{}, err
		}
		return importer.Budget{Bytes: b, From: "--max-memory " + maxMemory}, nil
	}
	b, from, err := AvailableMemory()
	if err != nil {
		return importer.Budget{}, err
	}
	return importer.Budget{Bytes: b, From: from}, nil
}

// ParseBytes reads a size such as 12GB, 12G, 12GiB, 800MB or 1000000
// (bytes). Decimal units (GB = 1e9) and binary ones (GiB = 2^30).
func ParseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	units := []struct {
		suffix string
		mul    float64
	}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10},
		{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
		{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"K", 1e3}, {"B", 1}}
	mul := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mul
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || v*mul > 1<<62 {
		return 0, fmt.Errorf("--max-memory %q: want a positive size such as 12GB, 800MB or 16GiB", s)
	}
	return int64(v * mul), nil
}

// AvailableMemory is what this process may use: the memory available on
// the machine now (/proc/meminfo's MemAvailable) plus what the process
// already holds, capped by its cgroup's limit (/sys/fs/cgroup/memory.max,
// or cgroup v1's memory.limit_in_bytes). from says which applied.
func AvailableMemory() (bytes int64, from string, err error) {
	avail, err := meminfo("MemAvailable")
	if err != nil {
		return 0, "", fmt.Errorf("reading the available memory: %w (give --max-memory)", err)
	}
	bytes, from = avail+selfRSS(), "MemAvailable in /proc/meminfo plus this process"
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v <= 0 { // "max": no limit
			continue
		}
		if v < bytes {
			bytes, from = v, f
		}
		break
	}
	return bytes, from, nil
}

// meminfo reads one field of /proc/meminfo, in bytes.
func meminfo(field string) (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) == 0 {
			break
		}
		kb, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/meminfo %s: %w", field, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc/meminfo has no %s", field)
}

// PeakRSS is this process's peak resident memory in bytes (VmHWM in
// /proc/self/status; 0 when unknown).
func PeakRSS() int64 {
	if kb, ok := procNumber("/proc/self/status", "VmHWM"); ok {
		return kb << 10
	}
	return 0
}

// diskReadBytes is how many bytes this process has had read from storage
// so far (read_bytes in /proc/self/io: file reads and page faults that
// missed the page cache), or -1 when unknown.
func diskReadBytes() int64 {
	if n, ok := procNumber("/proc/self/io", "read_bytes"); ok {
		return n
	}
	return -1
}

// fileRSS is the file-backed part of this process's resident memory
// (RssFile in /proc/self/status; 0 when unknown).
func fileRSS() int64 {
	if kb, ok := procNumber("/proc/self/status", "RssFile"); ok {
		return kb << 10
	}
	return 0
}

// procNumber reads the number after "field:" in the /proc file path (the
// first word of that line: kB in /proc/self/status, bytes in
// /proc/self/io); false when the file, the field or the number is missing.
func procNumber(path, field string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			if fs := strings.Fields(rest); len(fs) > 0 {
				n, err := strconv.ParseInt(fs[0], 10, 64)
				return n, err == nil
			}
			return 0, false
		}
	}
	return 0, false
}

// selfRSS is this process's resident memory in bytes (0 when unknown).
func selfRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fs := strings.Fields(string(b))
	if len(fs) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(fs[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// gcPercent is the heap growth between collections jobs run with, and
// runGCPercent that of whole training runs (tune, front: PlanMemoryLent),
// whose peak is held to their plan: their loops borrow vectors from the
// step's pool between evaluations (finetune.ScratchLender), whose
// displaced buffers are garbage every step, and at 25% the growth the
// heap was allowed between collections was the largest term of the full
// MTAN's tune (288×384, batch 2) above its live heap: 1.3–1.6 GB over
// 5.3–6.1 GB. The heap is pointer-free but for the graphs, so collecting
// more often is cheap (gctrace: 0% of the run's CPU time at 25% and at
// 10%; 54 collections in a whole tune of two steps at 10%).
const (
	gcPercent    = 25
	runGCPercent = 5
)

// gcGarbageMin is the least growth of the heap between collections: a
// collection costs its fixed part (stacks, globals, the graphs' pointers,
// the mark workers' start) however small the heap, and at gcPercent of a
// small model's heap it came every few dozen steps. The ConvNeXt fixture
// (9 MB live, 35 KB of garbage a step) collected every 100 ms of its
// 1.7 ms steps, 1–2 ms of CPU each (gctrace): about 2% of its step's CPU
// time with the allocation around it. 16 MiB is a rounding error beside
// the runtime's headroom above the plan (gcHeadroomMin) and makes those
// collections about six times rarer.
const gcGarbageMin = 16 << 20

// gcHeadroom is the share of the expected peak that the Go runtime's soft
// memory limit allows above it (see PlanMemory), and gcHeadroomMin its
// least value in bytes: room for the runtime's own memory, the garbage of
// one op's unpooled values and what the plan does not list (the graph,
// the data set). With a tenth, the full MTAN at 288×384 (batch 2, plan
// 5.7 GB) sat at its limit through its peak: 1,608 collections in a
// warm-up and one timed step, most freeing nothing, 30.7 s a step at
// 6.3 GB; with 15%, 46 collections in a warm-up and two timed steps,
// 27.3 s, 6.5 GB peak RSS (20%: 27.8 s, 6.8 GB).
const (
	gcHeadroom    = 0.15
	gcHeadroomMin = 256 << 20
)

// plannedBytes sums the expected peaks of every job planned in this
// process. The runtime's memory limit is the process's, and jobs may run
// at once (batch's workers), so the limit covers them all; it is never
// lowered when a job ends, so a process that runs many jobs one after
// the other ends up at its Limit, Go's collection as before GCLimit.
var plannedBytes atomic.Int64

// PlanMemory estimates a step of md on ds's first batch examples (with
// models copies and extra bytes per model beside it), resolves the limit
// (maxMemory as --max-memory gives it, "" for AvailableMemory) and
// returns an error naming a batch size that fits when the estimate is
// over it. Otherwise it sets the Go runtime's soft memory limit to the
// expected peak (with those of the other jobs planned in this process,
// plannedBytes) plus gcHeadroom (GCLimit; at most the limit), so that the
// garbage collector collects the step's unpooled values (MaxPool's
// indices, Resize's results…) before the heap outgrows the plan rather
// than after it grew by gcPercent, and lets the heap grow by gcPercent
// between collections instead of Go's default 100%. A step's large
// buffers are pooled and its garbage is pointer-free, so collecting more
// often is cheap. The limit is soft: a pass the plan does not cover
// (tune's report pass, saving) may exceed it, at the price of more
// frequent collections while it does.
func PlanMemory(md *backend.Model, ds *finetune.Dataset, batch, models int, extra int64, maxMemory string, held ...*finetune.Dataset) (*MemoryPlan, error) {
	return PlanMemoryLent(md, ds, batch, models, extra, 0, maxMemory, held...)
}

// PlanMemoryLent is PlanMemory for a loop that also borrows lent bytes
// per model from the step's pool between evaluations (MemoryPlan.Lent).
func PlanMemoryLent(md *backend.Model, ds *finetune.Dataset, batch, models int, extra, lent int64, maxMemory string, held ...*finetune.Dataset) (*MemoryPlan, error) {
	p := &MemoryPlan{Models: max(1, models), Extra: extra, Lent: lent, Data: ds.Bytes(), gcPercent: gcPercent}
	if lent > 0 {
		p.gcPercent = runGCPercent
	}
	for _, h := range held {
		if h != ds {
			p.Data += h.Bytes()
		}
	}
	b, err := ResolveBudget(maxMemory)
	if err != nil {
		return nil, err
	}
	p.Limit, p.LimitFrom = b.Bytes, b.From
	if maxMemory != "" {
		p.LimitFrom = "--max-memory"
	}
	n := min(batch, ds.Len())
	if err := CheckInputSizes(md, n, b); err != nil {
		return nil, err
	}
	first, err := ds.Rows(0, n)
	if err != nil {
		return nil, err
	}
	if p.Step, err = md.EstimateMemory(first); err != nil {
		return nil, err
	}
	shapes, err := shapeBatch(ds, n)
	if err != nil {
		return nil, err
	}
	if p.Report, err = md.ForwardBytes(shapes); err != nil {
		return nil, err
	}
	p.GC = p.garbage()
	// Jobs planned before this one in the process (batch workers) are
	// counted by their own plans.
	if plannedBytes.Load() == 0 {
		// Pages of data mapped from their files (npz.MapMinBytes) are
		// the kernel's to drop: they are not the process's to plan.
		p.Process = max(0, selfRSS()-min(fileRSS(), npz.MappedBytes())-p.Data-int64(p.Models)*p.Step.Weights)
	}
	if p.Total() > p.Limit {
		return nil, fmt.Errorf("--batch %d needs about %s (%s%s), more than the %s allowed (%s): %s",
			batch, backend.FormatBytes(p.Total()), p.Step.Parts(), p.loop(), backend.FormatBytes(p.Limit), p.LimitFrom, p.fitting(md, ds, n))
	}
	// The runtime's limit covers what the plans hold during the steps
	// (their heaps and the process), not the garbage the headroom above it
	// is for, nor the report pass, which runs before and after the steps:
	// counting it let the full MTAN's steps at 288×384 (batch 2) grow to
	// 7.3–7.4 GB of peak RSS against 6.3–6.4 GB with the steps' limit
	// (bench step, bench/side_by_side.py). The limit is soft: the report
	// pass may exceed it at the price of more frequent collections.
	p.planned = p.live() - int64(p.Models)*p.reportBytes()
	planned := plannedBytes.Add(p.planned)
	p.GCLimit = p.gcLimit(planned + p.Process)
	debug.SetMemoryLimit(p.GCLimit)
	// The percent is the process's: with other jobs planned in it (batch's
	// workers), their heaps count toward the floor, so that a small job
	// does not let a large one's heap grow by its raised percent.
	debug.SetGCPercent(p.percentOf(max(planned, p.live())))
	return p, nil
}

// garbage is the GC term of the plan: the growth percentOf allows the
// live heap, at most the headroom gcLimit leaves above it.
func (p *MemoryPlan) garbage() int64 {
	live := p.live()
	return min(live*int64(p.percentOf(live))/100, max(int64(gcHeadroom*float64(live)), gcHeadroomMin))
}

// percentOf is the GOGC for a process whose live heap is live bytes: the
// job's gcPercent, raised for a small heap to let it grow by at least
// gcGarbageMin.
func (p *MemoryPlan) percentOf(live int64) int {
	pc := p.gcPercent
	if pc == 0 {
		pc = gcPercent
	}
	if live > 0 && live*int64(pc)/100 < gcGarbageMin {
		pc = int((gcGarbageMin*100 + live - 1) / live)
	}
	return pc
}

// gcLimit is the soft memory limit for the Go runtime when the jobs of
// the process expect planned bytes at their peaks: that plus gcHeadroom
// of it (at least gcHeadroomMin), at most Limit.
func (p *MemoryPlan) gcLimit(planned int64) int64 {
	return min(p.Limit, planned+max(int64(gcHeadroom*float64(planned)), gcHeadroomMin))
}

// CheckInputSizes checks that a batch of batch examples of each model
// input, as md declares it (a dynamic first dimension is the batch, other
// dynamic dimensions count 1), fits in b: a graph input declared with
// 10¹² elements is refused by name and shape before anything is
// planned or allocated for it.
func CheckInputSizes(md *backend.Model, batch int, b importer.Budget) error {
	for _, in := range md.Inputs() {
		elems := big.NewInt(1)
		dims := make([]string, len(in.Shape))
		for i, d := range in.Shape {
			dims[i] = fmt.Sprint(d)
			switch {
			case d >= 0:
				elems.Mul(elems, big.NewInt(int64(d)))
			case i == 0:
				dims[i] = "N"
				elems.Mul(elems, big.NewInt(int64(batch)))
			default:
				dims[i] = "?"
			}
		}
		size := int64(4)
		if in.Type == importer.Float64 || in.Type == importer.Int64 {
			size = 8
		}
		bytes := new(big.Int).Mul(elems, big.NewInt(size))
		if b.Bytes > 0 && bytes.Cmp(big.NewInt(b.Bytes)) > 0 {
			need := "more than 9 EB"
			if bytes.IsInt64() {
				need = backend.FormatBytes(bytes.Int64())
			}
			return fmt.Errorf("model input %q has shape [%s]: %s elements take %s at --batch %d, more than the %s allowed (%s)",
				in.Name, strings.Join(dims, ","), elems, need, batch, backend.FormatBytes(b.Bytes), b.From)
		}
	}
	return nil
}

// fitting names the largest batch below n that the estimate accepts,
// found by bisection on the estimate itself (activations and scratch
// grow with the batch, not always in proportion).
func (p *MemoryPlan) fitting(md *backend.Model, ds *finetune.Dataset, n int) string {
	var estErr error
	fits := func(b int) bool {
		shapes, err := shapeBatch(ds, b)
		if err != nil {
			estErr = err
			return false
		}
		e, err := md.EstimateMemory(shapes)
		if err != nil {
			estErr = err
			return false
		}
		q := *p
		q.Step = e
		if q.Report, err = md.ForwardBytes(shapes); err != nil {
			estErr = err
			return false
		}
		q.GC = q.garbage()
		return q.Total() <= q.Limit
	}
	if !fits(1) {
		if estErr != nil {
			return fmt.Sprintf("a smaller --batch may fit (estimating one failed: %v)", estErr)
		}
		fixed := int64(p.Models)*(p.Step.Total()-p.Step.Values+p.Extra+p.Lent) + p.Data + p.Process
		return fmt.Sprintf("even --batch 1 does not fit (the parameters, loop and data alone need %s); use a machine with more memory or --freeze part of the model", backend.FormatBytes(fixed))
	}
	lo, hi := 1, n // fits(lo), !fits(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return fmt.Sprintf("--batch %d fits (with --accumulate to keep the effective batch)", lo)
}

// shapeBatch is a batch of b examples of ds for EstimateMemory, which
// reads shapes only: floating arrays keep their type and shape without
// values; integer arrays (labels, and inputs whose values fix shapes)
// are copied.
func shapeBatch(ds *finetune.Dataset, b int) (map[string]*importer.Tensor, error) {
	out := map[string]*importer.Tensor{}
	for name, a := range ds.Arrays {
		if !a.IsFloat() {
			rows, err := ds.Only(name).Rows(0, b)
			if err != nil {
				return nil, err
			}
			out[name] = rows[name]
			continue
		}
		t := &importer.Tensor{Name: a.Name, Type: a.Type, Shape: append([]int{b}, a.Shape[1:]...)}
		if a.F64 != nil || a.Type == importer.Float64 {
			t.F64 = []float64{} // floating, without values
		} else {
			t.F32 = []float32{}
		}
		out[name] = t
	}
	return out, nil
}
