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
	// TuneLR, at which the timed steps then run too, its output in a
	// temporary folder removed afterwards) of
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

// BenchStepOutcome is what `bench step` reports. Times are in seconds.
type BenchStepOutcome struct {
	Model      string     `json:"model"`
	Params     int        `json:"params"`
	Batch      int        `json:"batch"`
	Tasks      int        `json:"tasks"`
	LoadBuildS float64    `json:"load_build_s"` // reading model and data, opening the model, building the step's graph
	LoadPhases LoadPhases `json:"load_phases"`
	// LR is the learning rate of the timed steps' Adam: tune's default,
	// or with Tune the tune's.
	LR float64 `json:"lr"`
	// StepS are the timed steps' forward pass, backward passes and
	// direction (what PyTorch's twin, bench/step_models.py, times), and
	// MedianS their median.
	StepS   []float64 `json:"step_s"`
	MedianS float64   `json:"median_s"`
	// TuneStepS are the whole steps tune takes (the above, and Adam's
	// update of the weights written into the model), TuneMedianS their
	// median, and MaxOverMedian the slowest over the median.
	TuneStepS     []float64 `json:"tune_step_s"`
	TuneMedianS   float64   `json:"tune_median_s"`
	MaxOverMedian float64   `json:"max_over_median"`
	// DirectionS are the steps' directions as tune computes them
	// (finetune.Step.Direction): PNG's direction from J and, Adam's
	// proposal for it being the update, PNG's update held within Adam's
	// per-weight step bound (png.PNG.Constrain).
	DirectionS []float64 `json:"direction_s"`
	// The shares are of the summed tune steps.
	ForwardShare   float64 `json:"forward_share"`
	BackwardShare  float64 `json:"backward_share"`
	DirectionShare float64 `json:"direction_share"`
	PeakRSS        int64   `json:"peak_rss_bytes"`
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
// BenchStepOutcome.TuneMedianS (the bench's whole steps, Adam's update
// included, at the tune's learning rate).
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
// the step), runs one untimed step and then c.Steps timed ones of tune's
// loop on the first batch (Adam at tune's default rate, F the sum of the
// losses): the model's Evaluate (forward pass, one backward pass per task,
// J), the direction as tune computes it (PNG's direction and its update
// within Adam's step bound) and Adam's update, and reports their times
// and the process's peak resident memory.
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
	// builds the step's graph; beside the step, tune's loop holds its
	// vectors
	mem, err := PlanMemoryLent(md, ds, c.Batch, 1, TuneLoopBytes(len(setup.tasks), md.NumParams()), TuneLentBytes(md.NumParams()), c.MaxMemory)
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
	// The timed steps are tune's own (finetune.Run with Adam, PNG as tune
	// sets it, F the sum of the losses) on the one batch: the direction
	// is the one the loop computes, with the update held within Adam's
	// step bound (png.PNG.Constrain).
	train := &finetune.Dataset{Arrays: ds.Slice(0, out.Batch)}
	p := png.PNG{}
	p.Settings.ThresholdCap, p.Settings.MaxTradeoff = png.RobustThresholdCap, png.RobustMaxTradeoff
	// With a tune to compare, the bench steps run at its rate: the rate
	// decides whether the control is on and whether Constrain runs, and
	// the two must time the same computation.
	lr := TuneLR
	if c.Tune && c.TuneLR > 0 {
		lr = c.TuneLR
	}
	out.LR = lr
	// No divergence test: the steps time the computation on one batch
	// whatever the loss does, and a model's random weights at tune's
	// default rate can pass the test's bound within two steps.
	s := &finetune.Settings{Method: p, Optimizer: "adam", LR: lr, Steps: c.Steps + 1, BatchSize: out.Batch, Seed: 1, DivergeFactor: -1}
	var fwd, bwd, dirT, tuneT time.Duration
	var ms0, ms1 runtime.MemStats
	var prev time.Duration
	var profErr error
	rec := stepRecorder(func(st *finetune.Step) {
		tt := st.Elapsed - prev
		prev = st.Elapsed
		if st.Step == 1 {
			if c.CPUProfile != nil {
				profErr = pprof.StartCPUProfile(c.CPUProfile)
			}
			runtime.ReadMemStats(&ms0)
			return // warm-up: buffers allocated
		}
		e := md.LastStep()
		fwd, bwd, dirT, tuneT = fwd+e.Forward, bwd+e.Backward, dirT+st.Direction, tuneT+tt
		out.StepS = append(out.StepS, (e.Forward + e.Backward + st.Direction).Seconds())
		out.TuneStepS = append(out.TuneStepS, tt.Seconds())
		out.DirectionS = append(out.DirectionS, st.Direction.Seconds())
	})
	_, err = finetune.Run(context.Background(), md, train, nil, s, rec)
	if c.CPUProfile != nil && profErr == nil {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return nil, err
	}
	if profErr != nil {
		return nil, fmt.Errorf("the CPU profile: %w", profErr)
	}
	runtime.ReadMemStats(&ms1)
	out.AllocsPerStep = float64(ms1.Mallocs-ms0.Mallocs) / float64(c.Steps)
	out.AllocBytesPerStep = float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(c.Steps)
	out.MedianS = median(out.StepS)
	out.TuneMedianS = median(out.TuneStepS)
	out.MaxOverMedian = slices.Max(out.TuneStepS) / out.TuneMedianS
	if c.MemProfile != nil {
		// The profile is as of the last completed collection: without
		// one here, the last steps' allocations would be missing from it.
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(c.MemProfile, 0); err != nil {
			return nil, fmt.Errorf("the allocation profile: %w", err)
		}
	}
	total := tuneT.Seconds()
	out.ForwardShare, out.BackwardShare, out.DirectionShare = fwd.Seconds()/total, bwd.Seconds()/total, dirT.Seconds()/total
	if out.FLOPs, err = md.StepFLOPs(train.Slice(0, out.Batch)); err != nil {
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
		if out.Tune, err = c.tune(setup.tasks); err != nil {
			return nil, fmt.Errorf("the tune: %w", err)
		}
		out.Tune.Ratio = out.Tune.MedianS / out.TuneMedianS
	}
	out.PeakRSS = PeakRSS()
	return out, nil
}

// median returns the median of v (not empty).
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// stepRecorder is a finetune.Recorder that hands each step to a function.
type stepRecorder func(*finetune.Step)

func (stepRecorder) Init(*finetune.Config) error      { return nil }
func (f stepRecorder) Record(st *finetune.Step) error { f(st); return nil }
func (stepRecorder) Done(*finetune.Result) error      { return nil }

// tune runs c's tune (BenchStepConfig.Tune) over the bench's tasks, their
// sum the criterion, and times its steps.
func (c *BenchStepConfig) tune(tasks []backend.Task) (*TuneStepTiming, error) {
	dir, err := os.MkdirTemp("", "paretonav-bench-tune-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	names := make([]string, len(tasks))
	for i, t := range tasks {
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
