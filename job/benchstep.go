package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
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
	// Tune, when set, also runs a real tune in the same process after the
	// timed steps (TuneConfig.Prepare and Tune.Run, PNG with Adam at
	// TuneLR, its output in a temporary folder removed afterwards) of
	// Steps+1 steps on the same model, data and batch, and reports the
	// times between the loop's step records after the first (the whole
	// loop: evaluation, direction, optimizer, logging, checkpoints) beside
	// the bench steps'.
	Tune bool
	// TuneLR is the tune's learning rate (0: TuneLR).
	TuneLR float64
	// TuneCPUProfile, when set, receives a pprof CPU profile of the tune's
	// timed steps.
	TuneCPUProfile io.Writer
}

// PeakGEMMSize is the side of the square matrices of bench step's GEMM
// microbenchmark (BenchStepOutcome.PeakGFLOPS): large enough for the
// kernels' blocking to reach its steady rate (2·1536³ = 7.2 GFLOP a
// product).
const PeakGEMMSize = 1536

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
	// FLOPs is the step's floating-point work counted from its graph
	// (backend.StepFLOPs); GFLOPSDirect and GFLOPSExecuted are its direct
	// and executed counts over MedianS, in 10⁹ per second.
	FLOPs          backend.StepFLOPs `json:"flops"`
	GFLOPSDirect   float64           `json:"gflops_direct"`
	GFLOPSExecuted float64           `json:"gflops_executed"`
	// PeakGFLOPS is the float32 GEMM rate measured in the same run before
	// the model is loaded (backend.PeakGEMM, PeakGEMMSize square, on
	// GOMAXPROCS threads), and PeakShare GFLOPSExecuted over it: how
	// close the step comes to what this machine's cores do at best.
	PeakGFLOPS float64 `json:"peak_gemm_gflops"`
	PeakShare  float64 `json:"peak_share"`
	// Tune is the in-process tune's timing (BenchStepConfig.Tune).
	Tune *TuneStepTiming `json:"tune,omitempty"`
}

// TuneStepTiming is what a real tune's steps cost beside the bench steps
// of the same model in the same process: the seconds between the loop's
// consecutive step records (the first step, which allocates the loop's
// buffers, is not timed), their median, and Ratio, that median over
// BenchStepOutcome.MedianS.
type TuneStepTiming struct {
	StepS             []float64 `json:"step_s"`
	MedianS           float64   `json:"median_s"`
	Ratio             float64   `json:"ratio"`
	AllocsPerStep     float64   `json:"allocs_per_step"`
	AllocBytesPerStep float64   `json:"alloc_bytes_per_step"`
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
	// before the model: the product's matrices add nothing to the peak
	peak := backend.PeakGEMM(PeakGEMMSize, 3) / 1e9
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
	b := ds.Slice(0, out.Batch)
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
	out.MedianS = median(out.StepS)
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
	if out.FLOPs, err = md.StepFLOPs(b); err != nil {
		return nil, err
	}
	out.GFLOPSDirect = float64(out.FLOPs.Direct) / out.MedianS / 1e9
	out.GFLOPSExecuted = float64(out.FLOPs.Executed) / out.MedianS / 1e9
	out.PeakGFLOPS = peak
	out.PeakShare = out.GFLOPSExecuted / peak
	if c.Tune {
		// The bench's step buffers are idle from here on: the tune's
		// model takes their place.
		md.ReleaseBuffers()
		mem.forget() // the tune's plan sets the runtime's limits as a tune's own
		runtime.GC()
		if out.Tune, err = c.tune(); err != nil {
			return nil, fmt.Errorf("the tune: %w", err)
		}
		out.Tune.Ratio = out.Tune.MedianS / out.MedianS
	}
	out.PeakRSS = PeakRSS()
	return out, nil
}

// median returns the median of v (not empty).
func median(v []float64) float64 {
	sorted := slices.Sorted(slices.Values(v))
	m := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		m = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	return m
}

// tune runs c's tune (BenchStepConfig.Tune) and times its steps.
func (c *BenchStepConfig) tune() (*TuneStepTiming, error) {
	dir, err := os.MkdirTemp("", "paretonav-bench-tune-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	setup, err := c.ModelConfig.setup()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(setup.tasks))
	for i, t := range setup.tasks {
		names[i] = t.Name
	}
	tc := &TuneConfig{Model: c.Model, Data: c.Data, ModelConfig: c.ModelConfig, Criterion: strings.Join(names, " + "),
		Method:    MethodConfig{Name: "png", Alpha: png.DefaultAlpha, Gamma: png.DefaultGamma},
		Optimizer: TuneOptimizer, LR: c.TuneLR, Steps: c.Steps + 1, Batch: c.Batch, Out: filepath.Join(dir, "tuned.onnx")}
	tj, err := tc.Prepare(nil)
	if err != nil {
		return nil, err
	}
	tj.Progress = io.Discard // the progress lines tune prints, formatted
	rec := &stepTimer{prof: c.TuneCPUProfile, last: c.Steps + 1}
	tj.Extra = append(tj.Extra, rec)
	defer rec.stop()
	if _, err := tj.Run(context.Background()); err != nil {
		return nil, err
	}
	if rec.err != nil {
		return nil, rec.err
	}
	if len(rec.steps) == 0 {
		return nil, fmt.Errorf("the tune recorded %d steps, want %d", rec.n, c.Steps+1)
	}
	t := &TuneStepTiming{StepS: rec.steps, MedianS: median(rec.steps)}
	k := float64(len(rec.steps))
	t.AllocsPerStep = float64(rec.ms1.Mallocs-rec.ms0.Mallocs) / k
	t.AllocBytesPerStep = float64(rec.ms1.TotalAlloc-rec.ms0.TotalAlloc) / k
	return t, nil
}

// stepTimer is a finetune.Recorder that times the steps after the first
// up to step last (between consecutive Record calls), profiling them when
// prof is set.
type stepTimer struct {
	prof      io.Writer
	profiling bool
	n, last   int // steps recorded, the last step to time
	at        time.Time
	steps     []float64
	ms0, ms1  runtime.MemStats
	err       error
}

func (t *stepTimer) Init(*finetune.Config) error { return nil }

func (t *stepTimer) Record(*finetune.Step) error {
	now := time.Now()
	t.n++
	if t.n == 1 {
		if t.prof != nil {
			if err := pprof.StartCPUProfile(t.prof); err != nil {
				t.err = fmt.Errorf("the CPU profile: %w", err)
			} else {
				t.profiling = true
			}
		}
		runtime.ReadMemStats(&t.ms0)
	} else {
		t.steps = append(t.steps, now.Sub(t.at).Seconds())
		runtime.ReadMemStats(&t.ms1)
		if t.n == t.last {
			t.stop() // not the final evaluation after it
		}
	}
	t.at = time.Now()
	return nil
}

func (t *stepTimer) Done(*finetune.Result) error {
	t.stop()
	return nil
}

func (t *stepTimer) stop() {
	if t.profiling {
		pprof.StopCPUProfile()
		t.profiling = false
	}
}
