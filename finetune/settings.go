package finetune

import (
	"fmt"
	"math"

	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// Default values used for zero fields of Settings.
const (
	DefaultLR         = 1e-3 // the paper's step size ξ
	DefaultSteps      = 1000
	DefaultBatchSize  = 32
	DefaultMaxRetries = 3
	DefaultBeta1      = 0.9
	DefaultBeta2      = 0.999
	DefaultEps        = 1e-8
	DefaultStepFactor = 0.1
	// DefaultDivergeFactor is ρ of Settings.DivergeFactor: a loss that
	// rose by ten times the largest initial loss has left anything a
	// trade-off between tasks explains (from an untrained 10-class
	// classifier, ℓ ≈ 2.3: a loss above 25).
	DefaultDivergeFactor = 10
)

// Values of Settings.MultiScale.
const (
	MultiShared   = "shared"
	MultiPerModel = "model"
	MultiRaw      = "raw"
)

// CheckMultiScale returns an error unless s is a value of
// Settings.MultiScale ("" meaning the default).
func CheckMultiScale(s string) error {
	switch s {
	case "", MultiShared, MultiPerModel, MultiRaw:
		return nil
	}
	return fmt.Errorf("%q: want %s, %s or %s", s, MultiShared, MultiPerModel, MultiRaw)
}

// Settings configures Run and RunMulti. The zero value is usable except
// for Method (see below); every field documents its default.
type Settings struct {
	// Method computes the update direction from the task gradients. nil
	// means png.PNG{}, the paper's method with its defaults.
	Method png.Method
	// Criterion is F(ℓ), the function PNG navigates toward. nil means the
	// sum of the task losses. In RunMulti without Multi, every point is
	// driven by Criterion on its own. Besides the task losses it may read
	// the problem's terms (TermProblem) and criterion.Drift, ‖θ − θ₀‖²
	// with θ₀ the parameters at the start of the run: their gradients
	// enter ∇F outside the span of the task gradients.
	Criterion criterion.Criterion
	// Multi is the criterion over all points in RunMulti (the energy that
	// spreads them over the front). It takes precedence over Criterion,
	// which is then only reported per point. Run ignores it.
	Multi criterion.Multi
	// PerModel is added to Multi for every model in RunMulti:
	// F = Multi(L_1..L_N) + Σ_k PerModel(x_k), with x_k model k's task
	// losses, terms and drift (criterion.ParseMultiPoint reads both from
	// "energy + EXPR"). Its gradient is added after Multi's is normalised.
	// nil means none; Run and RunMulti without Multi ignore it.
	PerModel criterion.Criterion
	// MultiScale says how Multi's gradients ∂F/∂L_k reach the models:
	// MultiPerModel (the default, "" too) scales each to unit length;
	// MultiShared divides all of them by the largest of their lengths, so
	// the model pushed hardest moves at unit strength and the others in
	// proportion (a model far from all others is pushed less, as by the
	// raw energy); MultiRaw hands them on as they are. The energy's
	// gradient grows like the inverse cube of the distance between
	// models, so its raw size says more about how close two models are
	// than about how far to move: normalised, the learning rate sets the
	// step. Measured on LeNet2 from scratch, 5 models,
	// 300 Adam steps, with the trade test): shared gave 3 and 4 of 5
	// models non-dominated on seeds 1 and 2 with neighbour-gap ratios
	// 7.4 and 2.5, per model 3 and 4 with 3.2 and 4.0; no better, so the
	// default stays per model.
	MultiScale string
	// MultiTrade removes from each model's ∂F/∂L_k its mean over the
	// tasks before it is scaled, so that Multi asks every model only for
	// trades (lower some losses, raise others) and never for all of its
	// losses to rise or fall together: descent toward the front is left to
	// PNG's control. The paper's energy (false, the default) pushes a
	// model away from each other model along their difference in loss
	// space; between a model and one that beats it on every task that
	// difference has one sign, so the push raises every loss of the worse
	// model (PNG's control holds it to the minimum rate α·g) and lowers
	// every loss of the better one: the worse model stays behind. Measured
	// on LeNet2 from scratch, 5 models, 300 Adam steps):
	// the dominated models of the paper's energy descended at −0.047 to
	// −0.050 per step against −0.061 to −0.066 for the others.
	MultiTrade bool

	// DirectionAsGradient hands PNG's direction v to a momentum or Adam
	// optimizer as its gradient and lets it move as it would, as the
	// paper does, instead of posing PNG's constraint on the update the
	// optimizer makes (png.PNG.Constrain, the default). The guarantee then
	// holds for v only: Adam's per-coordinate scaling and momentum move
	// along something else. It also skips the trade test on the
	// optimizer's update (png.PNG.ImproperUpdate); PNG's own test on v
	// stays.
	DirectionAsGradient bool

	// Optimizer is "sgd" (default) or "adam". The direction v is handed to
	// it as the gradient; plain SGD is θ ← θ − lr·v. With SGD (momentum or
	// not) a criterion's drift is taken implicitly, as a proximal step: v
	// is divided by 1 + 2·lr·∂F/∂drift, so that a heavily weighted drift
	// pulls the parameters toward θ₀ without overshooting it (an explicit
	// step multiplies θ − θ₀ by 1 − 2·lr·∂F/∂drift). Adam's step, bounded
	// per parameter (AdamStepBound), needs no such care, and PNG's
	// constrained update of it stays within the same bound.
	Optimizer string
	// Momentum is SGD's momentum μ (default 0): b ← μb + v, θ ← θ − lr·b.
	Momentum float64
	// Beta1, Beta2, Eps are Adam's β1 (0.9), β2 (0.999) and ε (1e-8).
	Beta1, Beta2, Eps float64

	// LR is the learning rate (default 1e-3).
	LR float64
	// LRSchedule is "constant" (default); "cosine": LR·½(1+cos(π·k/T)) at
	// step k of T; or "step": LR·StepFactor^⌊k/StepEvery⌋.
	LRSchedule string
	// StepEvery is the period of the "step" schedule (default T/3, at
	// least 1); StepFactor its factor (default 0.1).
	StepEvery  int
	StepFactor float64

	// Steps is the number of steps. When 0, Epochs passes over the
	// training set are done; when both are 0, DefaultSteps.
	Steps  int
	Epochs int
	// BatchSize is the number of examples per step (default 32). The last
	// batch of an epoch may be smaller. Ignored for problems without data.
	BatchSize int
	// Seed seeds the per-epoch shuffle of the training set.
	Seed int64

	// ValEvery evaluates the validation set every ValEvery steps (0: only
	// at the end, when a validation set is given).
	ValEvery int
	// ValMeter, when set, returns a fresh Meter for model k (0 for Run)
	// at every validation pass over a validation set; its metrics are
	// recorded beside the validation losses (Point.ValMetrics,
	// PointResult.ValMetrics). nil means losses only.
	ValMeter func(k int) Meter
	// CheckpointEvery writes a checkpoint to CheckpointPath every
	// CheckpointEvery steps (0: never, except on interruption when
	// CheckpointPath is set).
	CheckpointEvery int
	CheckpointPath  string
	// CheckpointJob is stored as it is in every checkpoint
	// (Checkpoint.Job, ReadCheckpointInfo): the caller's resolved job
	// configuration, from which a run can be continued with the
	// checkpoint alone. nil: none.
	CheckpointJob []byte

	// MaxRetries is how many times a non-finite step is rolled back with
	// a halved learning rate before the run fails (default 3; negative:
	// none). The halving persists for the rest of the run.
	MaxRetries int
	// DivergeFactor is ρ in the divergence test: a model whose task loss i
	// exceeds ℓ_i(0) + ρ·max_j |ℓ_j(0)| (its losses at the first step)
	// has diverged; the step is rolled back like a non-finite one, and
	// after MaxRetries the run fails with a *DivergedError naming the
	// model, task and step, so that no diverged model is returned as a
	// result. Default DefaultDivergeFactor; negative: no test.
	DivergeFactor float64
	// Workers is the number of points RunMulti evaluates at once
	// (default 1). Each Problem must then be independent of the others.
	Workers int

	// Meta is copied into the configuration record (the first line of a
	// JSON-lines log): the command line's problem name, its init, ...
	Meta map[string]any
}

// resolved returns a copy of s with the defaults filled in, or an error
// naming the field that is wrong.
func (s *Settings) resolved() (Settings, error) {
	var r Settings
	if s != nil {
		r = *s
	}
	if r.Method == nil {
		r.Method = png.PNG{}
	}
	switch r.Optimizer {
	case "":
		r.Optimizer = "sgd"
	case "sgd", "adam":
	default:
		return r, fmt.Errorf("finetune: Settings.Optimizer %q: want \"sgd\" or \"adam\"", r.Optimizer)
	}
	if r.Beta1 == 0 {
		r.Beta1 = DefaultBeta1
	}
	if r.Beta2 == 0 {
		r.Beta2 = DefaultBeta2
	}
	if r.Eps == 0 {
		r.Eps = DefaultEps
	}
	if r.LR == 0 {
		r.LR = DefaultLR
	}
	switch r.LRSchedule {
	case "":
		r.LRSchedule = "constant"
	case "constant", "cosine", "step":
	default:
		return r, fmt.Errorf("finetune: Settings.LRSchedule %q: want constant, cosine or step", r.LRSchedule)
	}
	if r.StepFactor == 0 {
		r.StepFactor = DefaultStepFactor
	}
	if r.BatchSize == 0 {
		r.BatchSize = DefaultBatchSize
	}
	if r.MaxRetries == 0 {
		r.MaxRetries = DefaultMaxRetries
	} else if r.MaxRetries < 0 {
		r.MaxRetries = 0
	}
	if r.Workers <= 0 {
		r.Workers = 1
	}
	if err := CheckMultiScale(r.MultiScale); err != nil {
		return r, fmt.Errorf("finetune: Settings.MultiScale %w", err)
	}
	if r.MultiScale == "" {
		r.MultiScale = MultiPerModel
	}
	if r.DivergeFactor == 0 {
		r.DivergeFactor = DefaultDivergeFactor
	}
	if math.IsNaN(r.DivergeFactor) || math.IsInf(r.DivergeFactor, 0) {
		return r, fmt.Errorf("finetune: Settings.DivergeFactor = %v: want a finite value (negative: no divergence test)", r.DivergeFactor)
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"LR", r.LR}, {"Momentum", r.Momentum}, {"Beta1", r.Beta1}, {"Beta2", r.Beta2}, {"Eps", r.Eps}, {"StepFactor", r.StepFactor}} {
		if c.v < 0 || math.IsNaN(c.v) || math.IsInf(c.v, 0) {
			return r, fmt.Errorf("finetune: Settings.%s = %v: want a finite value ≥ 0", c.name, c.v)
		}
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"Steps", r.Steps}, {"Epochs", r.Epochs}, {"BatchSize", r.BatchSize}, {"ValEvery", r.ValEvery}, {"CheckpointEvery", r.CheckpointEvery}, {"StepEvery", r.StepEvery}} {
		if c.v < 0 {
			return r, fmt.Errorf("finetune: Settings.%s = %d: want ≥ 0", c.name, c.v)
		}
	}
	if r.CheckpointEvery > 0 && r.CheckpointPath == "" {
		return r, fmt.Errorf("finetune: Settings.CheckpointEvery = %d but CheckpointPath is empty", r.CheckpointEvery)
	}
	return r, nil
}

// totalSteps returns the step limit for a training set of n examples.
func (s *Settings) totalSteps(n int) int {
	switch {
	case s.Steps > 0:
		return s.Steps
	case s.Epochs > 0:
		return s.Epochs * batchesPerEpoch(n, s.BatchSize)
	}
	return DefaultSteps
}

// lrAt returns the scheduled learning rate for step k (0-based) of total.
func (s *Settings) lrAt(k, total int) float64 {
	switch s.LRSchedule {
	case "cosine":
		return s.LR * 0.5 * (1 + math.Cos(math.Pi*float64(k)/float64(total)))
	case "step":
		every := s.StepEvery
		if every == 0 {
			every = max(total/3, 1)
		}
		return s.LR * math.Pow(s.StepFactor, float64(k/every))
	}
	return s.LR
}
