package job

import (
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/paretonav/paretonav/png"
)

// BenchStepConfig is a `bench step` job: time PNG steps of an ONNX model
// on the first batch of its data.
type BenchStepConfig struct {
	Model string   // MODEL.onnx
	Data  []string // --data sources
	ModelConfig
	Batch int
	Steps int // timed steps (after one untimed warm-up step)
	// CPUProfile, when set, receives a pprof CPU profile of the timed
	// steps (not of loading or the warm-up step).
	CPUProfile io.Writer
	// MemProfile, when set, receives a pprof allocation profile written
	// after the timed steps (go tool pprof -sample_index=alloc_space: what
	// the whole run allocated, by call site; with GODEBUG=memprofilerate=1
	// every allocation, so that the profiles of runs of 1 and N+1 steps
	// differ, with pprof -base, by exactly N steps' allocations).
	MemProfile io.Writer
}

// BenchStepOutcome is what `bench step` reports. Times are in seconds;
// the shares are of the summed step times.
type BenchStepOutcome struct {
	Model         string     `json:"model"`
	Params        int        `json:"params"`
	Batch         int        `json:"batch"`
	Tasks         int        `json:"tasks"`
	LoadBuildS    float64    `json:"load_build_s"` // reading model and data, opening the model, building the step's graph
	LoadPhases    LoadPhases `json:"load_phases"`
	StepS         []float64  `json:"step_s"`
	MedianS       float64    `json:"median_s"`
	ForwardShare  float64    `json:"forward_share"`
	BackwardShare float64    `json:"backward_share"`
	PNGShare      float64    `json:"png_share"` // the PNG direction from J
	PeakRSS       int64      `json:"peak_rss_bytes"`
	// AllocsPerStep and AllocBytesPerStep are the heap objects and bytes
	// the timed steps allocated, per step (runtime.MemStats; the warm-up
	// step's buffers are not counted). A steady-state step should allocate
	// next to nothing: what it does allocate, the garbage collector must
	// later find and free.
	AllocsPerStep     float64 `json:"allocs_per_step"`
	AllocBytesPerStep float64 `json:"alloc_bytes_per_step"`
	Memory            string  `json:"expected_memory"`
}

// LoadPhases splits BenchStepOutcome.LoadBuildS: reading, checking and
// building the model (ModelS), reading the data (DataS), planning the
// memory (PlanS), and the bytes the whole load had read from storage
// because they were not in the page cache: a load much slower than the
// same model's other loads with megabytes of them read the model file or
// the program itself from disk.
type LoadPhases struct {
	ModelS    float64 `json:"model_s"`
	DataS     float64 `json:"data_s"`
	PlanS     float64 `json:"plan_s"`
	DiskBytes int64   `json:"disk_read_bytes"` // -1 where /proc/self/io is missing
}

// BenchStep loads c's model and data (timing it, with the graph build of
// the step), runs one untimed step and then c.Steps timed ones on the
// first batch: the model's Evaluate (forward pass, one backward pass per
// task, J) and the PNG direction from J, and reports their times and the
// process's peak resident memory.
func BenchStep(c *BenchStepConfig) (*BenchStepOutcome, error) {
	if c.Batch < 1 {
		return nil, fmt.Errorf("--batch %d: want at least 1", c.Batch)
	}
	if c.Steps < 1 {
		return nil, fmt.Errorf("--steps %d: want at least 1", c.Steps)
	}
	if len(c.Data) == 0 {
		return nil, missingData("data", "the data")
	}
	start, disk := time.Now(), diskReadBytes()
	setup, err := c.ModelConfig.setup()
	if err != nil {
		return nil, err
	}
	_, md, err := setup.open(nil, c.Model)
	if err != nil {
		return nil, err
	}
	bind, err := setup.binding(md, c.Model)
	if err != nil {
		return nil, err
	}
	modelDone := time.Now()
	ds, err := bind.Load(nil, "--data", c.Data, c.Batch, c.Batch)
	if err != nil {
		return nil, err
	}
	dataDone := time.Now()
	// builds the step's graph; beside the step, the loop holds the direction
	mem, err := PlanMemory(md, ds, c.Batch, 1, 4*int64(md.NumParams()), c.MaxMemory)
	if err != nil {
		return nil, err
	}
	out := &BenchStepOutcome{Model: c.Model, Params: md.NumParams(), Batch: min(c.Batch, ds.Len()), Tasks: len(setup.tasks),
		LoadBuildS: time.Since(start).Seconds(), Memory: mem.String()}
	out.LoadPhases = LoadPhases{ModelS: modelDone.Sub(start).Seconds(), DataS: dataDone.Sub(modelDone).Seconds(), DiskBytes: -1}
	out.LoadPhases.PlanS = out.LoadBuildS - out.LoadPhases.ModelS - out.LoadPhases.DataS
	if d := diskReadBytes(); d >= 0 && disk >= 0 {
		out.LoadPhases.DiskBytes = d - disk
	}
	b, err := ds.Rows(0, out.Batch)
	if err != nil {
		return nil, err
	}
	m, n := len(setup.tasks), md.NumParams()
	losses := make([]float64, m)
	jac := png.NewJacobian(m, n)
	dir := make([]float32, n)
	grad := png.Gradient{Coef: slices.Repeat([]float64{1}, m), Losses: losses}
	var fwd, bwd, dirT time.Duration
	var ms0, ms1 runtime.MemStats
	for s := 0; s <= c.Steps; s++ {
		t0 := time.Now()
		if err := md.Evaluate(b, losses, &jac); err != nil {
			return nil, err
		}
		t1 := time.Now()
		if _, err := (png.PNG{}).Direction(dir, jac, grad, nil); err != nil {
			return nil, fmt.Errorf("the PNG direction: %w", err)
		}
		t2 := time.Now()
		if s == 0 {
			if c.CPUProfile != nil {
				if err := pprof.StartCPUProfile(c.CPUProfile); err != nil {
					return nil, fmt.Errorf("the CPU profile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			runtime.ReadMemStats(&ms0)
			continue // warm-up: buffers allocated
		}
		st := md.LastStep()
		fwd, bwd, dirT = fwd+st.Forward, bwd+st.Backward, dirT+t2.Sub(t1)
		out.StepS = append(out.StepS, t2.Sub(t0).Seconds())
	}
	runtime.ReadMemStats(&ms1)
	out.AllocsPerStep = float64(ms1.Mallocs-ms0.Mallocs) / float64(c.Steps)
	out.AllocBytesPerStep = float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(c.Steps)
	total := 0.0
	for _, v := range out.StepS {
		total += v
	}
	sorted := slices.Sorted(slices.Values(out.StepS))
	out.MedianS = sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		out.MedianS = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	if c.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if c.MemProfile != nil {
		// The profile is as of the last completed collection: without
		// one here, the last steps' allocations would be missing from it.
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(c.MemProfile, 0); err != nil {
			return nil, fmt.Errorf("the allocation profile: %w", err)
		}
	}
	out.ForwardShare, out.BackwardShare, out.PNGShare = fwd.Seconds()/total, bwd.Seconds()/total, dirT.Seconds()/total
	out.PeakRSS = PeakRSS()
	return out, nil
}
