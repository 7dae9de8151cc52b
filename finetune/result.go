package finetune

// Result is the outcome of a run. Losses, F and G are measured at the
// final parameters on the batch of the last step (the empty batch for
// problems without data) when the run reached its step limit; after an
// interruption they are those of the last evaluation.
type Result struct {
	Status     Status
	Steps      int      // steps completed, counting those before a resume
	Tasks      []string // task names, in loss order
	F          float64  // final criterion value (RunMulti: the multi-point criterion, or the sum over points)
	InitialF   float64  // criterion value at the first evaluation of the run
	Points     []PointResult
	Checkpoint string // the last checkpoint written ("" when none)
	// CheckpointErr is the failure of the last periodic checkpoint
	// (Settings.CheckpointEvery), after which the run went on; nil when
	// it was written. Checkpoint then names an older one, if any.
	CheckpointErr error
}

// PointResult is one model's outcome.
type PointResult struct {
	Params        []float32 // final parameters
	Losses        []float64 // final task losses
	Terms         []float64 // final term values (nil without terms)
	Drift         float64   // final ‖θ − θ₀‖² (0 unless a criterion reads drift)
	InitialLosses []float64 // task losses at the first evaluation
	F             float64   // this point's Criterion value (0 when only Multi is set)
	InitialF      float64
	G             float64   // g(θ) at the end: 0 on the Pareto set
	ValLosses     []float64 // validation losses at the end, nil without a validation set
	// ValMetrics are the task metrics at the end (Settings.ValMeter), nil
	// without.
	ValMetrics map[string]map[string]float64
}

// Losses returns the first point's final losses (Run's only point).
func (r *Result) Losses() []float64 { return r.Points[0].Losses }

// G returns the first point's final g(θ).
func (r *Result) G() float64 { return r.Points[0].G }
