// Package bench runs the PNG paper's comparison of methods that find
// several diverse Pareto models (Ye & Liu 2022, MultiMNIST experiments):
// linear scalarization, MGD, EPO and PNG with the energy criterion, each
// producing 5 two-headed LeNets per dataset and seed, measured by
// hypervolume and IGD+ on test losses and accuracies, with paired t-tests
// of PNG against each baseline. The command `paretonav bench multimnist`
// is a thin layer over Run.
//
// The protocol, as implemented (the paper's appendix, section "Finding
// Diverse Pareto Models": Adam, batch 256, lr 1e-3, 100 epochs, MGD
// initialised by 60 epochs of linear scalarization with evenly spaced
// preferences and then run for 40, checkpoints every epoch from epoch 60,
// HV reference (0.6, 0.6), IGD+ against the union of all methods):
//
//  1. Warm-up: 5 models (one LeNet2 initialisation per seed, the same for
//     all 5) are trained with linear scalarization, model k with the
//     preference (w_k, 1 − w_k), w_k ∈ {0.1, 0.3, 0.5, 0.7, 0.9}: 5 weight
//     vectors evenly spaced on the 2-simplex, the extremes excluded.
//  2. From those 5 models, each method trains for the same number of
//     further steps: linear continues with its weights; MGD (initialised
//     from the linear runs, as the paper does) follows the min-norm
//     direction; EPO (Mahapatra & Rai 2020) moves model k toward its
//     preference ray, r = (w_k, 1 − w_k) with linear's weights (the
//     paper: "equally distributed preference vectors for linear
//     scalarization and EPO"); PNG trains the 5 together with the energy
//     criterion, with the settings of Config: the trade test
//     (MaxTradeoff), the energy's scale (EnergyScale), the threshold cap
//     (ThresholdCap) and whether its constraint is posed on Adam's update
//     (the default) or its direction is handed to Adam as the paper does
//     (PaperUpdate). MaxTradeoff 0 with PaperUpdate is the paper's PNG.
//     All use Adam (lr 1e-3) and batch 256; every method sees the same
//     batches. The runs are jobs (one per 5-model run, one per linear
//     model) shared by the workers, largest first; Estimate prices the
//     same schedule.
//  3. Checkpoints: each model's parameters are collected at Checkpoints
//     evenly spaced steps of phase 2 (the last one at its end); a method's
//     point set is all 5 × Checkpoints models, scored on the test set.
//  4. Measures: hypervolume of the test losses below (0.6, 0.6) and of
//     the test accuracies above (0.6, 0.6) (LossRef, AccRef: the paper's
//     references); IGD+ of losses and of (negated)
//     accuracies against the non-dominated union of every method's
//     points for that dataset and seed.
//  5. Ablation (Config.Ablation, the paper's appendix table): PNG with α ∈
//     {0.25, 0.5, 0.75} at γ = 0.1 and γ ∈ {0.01, 0.1, 0.25} at α = 0.5, each
//     5 models from the same phase-1 models, scored like the methods; its
//     own table, IGD+ against the union of the methods and the variants.
//  6. Dynamics: every method's phase-2 run records, per checkpoint, the
//     mean g(θ), PNG's g/ē and share of steps with the control on, and the
//     first-order descent of each loss (Trace), to explain differences.
//
// A phase-2 run that fails numerically (a model diverged, finetune's
// *DivergedError, or went non-finite) does not stop the benchmark: the
// failure and its error are recorded for that dataset, seed and method
// (SeedResult.Failures, "Failed runs" in the Markdown), its points are
// left out, its metrics are NaN (null in JSON), means are over the seeds
// that have a value and the t-tests pair only seeds where both runs
// exist. Any other error (data, cancellation) still aborts Run.
package bench

import (
	"fmt"
	"strings"
	"time"
)

// Budget fixes the sizes of a benchmark run.
type Budget struct {
	Name          string
	TrainExamples int // training pairs per dataset
	TestExamples  int // test pairs per dataset
	Seeds         int // independent repetitions (initialisation, pairing, batches)
	WarmSteps     int // phase 1: linear scalarization steps per model
	Steps         int // phase 2: steps of each method
	Checkpoints   int // parameter snapshots per model in phase 2
	Batch         int
	Models        int // models per method (5)
}

// Per-step costs behind Estimate, measured on this project's 2-core
// machine (AMD EPYC, AVX-512) with `go test ./bench -run '^$'
// -bench 'ModelStep|Score' -benchtime 10x` while the machine was shared
// (load average 9–11): one model-step of the benchmark's training loop
// (LeNet2, m = 2: forward pass, both task gradients, direction, Adam) at
// batch 256 took 0.091–0.102 s of CPU time, alone (linear) or among the 5
// PNG models; scoring one model on 256 test pairs (one forward pass,
// score) 0.034–0.035 s. Costs scale about linearly with the batch size.
// The constants are about the upper end. A small-budget run on an earlier
// machine and backend (cli/testdata/rescore/small.json) spent about
// 0.13 s of CPU per model-step: budgets are sized with a margin for that.
const (
	StepCPU256    = 100 * time.Millisecond
	ForwardCPU256 = 35 * time.Millisecond
)

// Budgets by name. "medium" is the paper's structure scaled to about an
// hour on two free cores (see its comment); "small" is a quick
// budget (20,480 pairs, 375 steps per model, 3 seeds); "paper" is the paper's scale:
// 120,000/20,000 pairs, 100 epochs per model (60 of linear warm-up, the
// paper's MGD protocol, then 40 of each method), one checkpoint per epoch
// over the last 40 epochs (the paper collects from epoch 60 on), 5 seeds;
// "tiny" is a smoke test of the whole pipeline in seconds.
var Budgets = map[string]Budget{
	"tiny":   {Name: "tiny", TrainExamples: 64, TestExamples: 32, Seeds: 2, WarmSteps: 2, Steps: 2, Checkpoints: 2, Batch: 16, Models: 5},
	"small":  {Name: "small", TrainExamples: 20480, TestExamples: 1000, Seeds: 3, WarmSteps: 300, Steps: 75, Checkpoints: 3, Batch: 256, Models: 5},
	"medium": medium,
	"paper": {Name: "paper", TrainExamples: 120000, TestExamples: 20000, Seeds: 5,
		WarmSteps: 60 * 469, Steps: 40 * 469, Checkpoints: 40, Batch: 256, Models: 5},
}

// medium is the paper's protocol at a tenth of its epochs: 10 epochs of
// 8,192 training pairs (32 steps of 256 each), 6 of linear warm-up and 4
// of each method (the paper's 60/40 split, so the checkpoints cover the
// last 40% of training), a checkpoint every half epoch of phase 2 (8 per
// model, 40 points per method; the paper has one per epoch, 200 points),
// 5 seeds (the paper's 5 trials) and 2,048 test pairs (8 batches).
//
// Why these numbers: on two cores the whole run (three datasets, four
// methods, 5 seeds) affords about 320 steps per model. The small budget
// spent them on 4.7 epochs of 20,480 pairs, where the models are far
// from converged and the method that descends fastest wins every
// measure; the paper compares converged fronts after 100 epochs. Fewer
// pairs and more epochs move toward the paper's regime (each model sees
// its training set 10 times and ends near a training-set optimum) at the
// cost of a smaller training set. 2,048 test pairs keep the standard error
// of a task accuracy near 0.006 (at 93%) while scoring costs less than a
// tenth of the run. Estimate: 52 minutes for the three datasets and 12.5
// more for the ablation on MultiMNIST (64.5 in all), which leaves room
// for per-step costs up to 1.39× the measured ones (the small run's
// 0.13 s) within 90 minutes.
var medium = Budget{Name: "medium", TrainExamples: 8192, TestExamples: 2048, Seeds: 5,
	WarmSteps: 6 * 32, Steps: 4 * 32, Checkpoints: 8, Batch: 256, Models: 5}

// BudgetNames lists the budgets in the order the CLI shows them.
var BudgetNames = []string{"small", "medium", "paper", "tiny"}

// Validate checks that every size is positive and that the checkpoints
// fit in phase 2.
func (b Budget) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"TrainExamples", b.TrainExamples}, {"TestExamples", b.TestExamples}, {"Seeds", b.Seeds},
		{"WarmSteps", b.WarmSteps}, {"Steps", b.Steps}, {"Checkpoints", b.Checkpoints}, {"Batch", b.Batch}, {"Models", b.Models}} {
		if f.v < 1 {
			return fmt.Errorf("bench: budget %q: %s = %d, want ≥ 1", b.Name, f.name, f.v)
		}
	}
	if b.Checkpoints > b.Steps {
		return fmt.Errorf("bench: budget %q: %d checkpoints in %d steps", b.Name, b.Checkpoints, b.Steps)
	}
	if b.Seeds < 2 {
		return fmt.Errorf("bench: budget %q: %d seed; the t-test needs at least 2", b.Name, b.Seeds)
	}
	return nil
}

// CheckpointSteps returns the phase-2 steps (1-based) at which parameters
// are collected: Checkpoints steps evenly spaced, the last at Steps.
func (b Budget) CheckpointSteps() []int {
	out := make([]int, b.Checkpoints)
	for i := range out {
		out[i] = (i + 1) * b.Steps / b.Checkpoints
	}
	return out
}

// Methods compared, in table order.
var Methods = []string{"linear", "mgd", "epo", "png"}

// ModelSteps returns the training steps of single models in one (dataset,
// seed) run without the ablation: Models warm-up runs, then Models per
// method in phase 2.
func (b Budget) ModelSteps() int {
	return b.Models*b.WarmSteps + len(Methods)*b.Models*b.Steps
}

// AblationModelSteps returns the extra training steps of the ablation in
// one (dataset, seed) run: Models per variant in phase 2 (the warm-up and
// the default png are shared with the main table).
func (b Budget) AblationModelSteps() int { return len(AblationVariants()) * b.Models * b.Steps }

// Scorings returns the number of models scored on the test set per
// (dataset, seed), without the ablation.
func (b Budget) Scorings() int { return len(Methods) * b.Models * b.Checkpoints }

// seedTime is the expected duration of one (dataset, seed) run with
// variants ablation variants on workers free cores: the makespans of the
// jobs that Run schedules (phase 1: a job per model; phase 2: one per
// 5-model run, one per linear model; scoring: one per model of each
// method), priced at StepCPU256 and ForwardCPU256 scaled to the batch
// size.
func (b Budget) seedTime(workers, variants int) time.Duration {
	scale := float64(b.Batch) / 256
	step, fwd := scale*float64(StepCPU256), scale*float64(ForwardCPU256)
	var warm, phase2, score []int
	for range b.Models {
		warm = append(warm, b.WarmSteps)
		phase2 = append(phase2, b.Steps) // linear, one model at a time
	}
	batches := (b.TestExamples + b.Batch - 1) / b.Batch
	for range len(Methods) - 1 + variants { // mgd, epo, png and the variants
		phase2 = append(phase2, b.Models*b.Steps)
	}
	for range (len(Methods) + variants) * b.Models {
		score = append(score, b.Checkpoints*batches)
	}
	units := float64(makespan(warm, workers)+makespan(phase2, workers))*step + float64(makespan(score, workers))*fwd
	return time.Duration(units)
}

// Estimate returns the expected duration of the budget over datasets
// (without the ablation) with workers models trained at once on as many
// free cores, from the measured per-step costs (StepCPU256,
// ForwardCPU256) scaled to the batch size. Data generation and graph
// compilation (a few seconds) are left out.
func (b Budget) Estimate(datasets, workers int) time.Duration {
	return time.Duration(datasets*b.Seeds) * b.seedTime(workers, 0)
}

// AblationEstimate returns what the ablation adds to Estimate: its
// variants' phase-2 runs and scorings on one dataset, every seed.
func (b Budget) AblationEstimate(workers int) time.Duration {
	return time.Duration(b.Seeds) * (b.seedTime(workers, len(AblationVariants())) - b.seedTime(workers, 0))
}

// Describe returns the plan in a few lines: sizes, steps, and the expected
// duration; ablation names the dataset of the α/γ ablation ("" for none).
func (b Budget) Describe(datasets []string, workers int, ablation string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "bench plan (budget %s): datasets %s; %d seeds\n", b.Name, strings.Join(datasets, ", "), b.Seeds)
	fmt.Fprintf(&sb, "  data: %d training and %d test pairs per dataset; batch %d; Adam lr 1e-3; %.3g epochs per model\n",
		b.TrainExamples, b.TestExamples, b.Batch, b.Epochs())
	fmt.Fprintf(&sb, "  phase 1: %d linear-scalarization models × %d steps (weights 0.1..0.9)\n", b.Models, b.WarmSteps)
	fmt.Fprintf(&sb, "  phase 2: linear, mgd, epo (preferences as linear's weights), png (energy) × %d models × %d steps from the phase-1 models; checkpoints at steps %v\n",
		b.Models, b.Steps, b.CheckpointSteps())
	fmt.Fprintf(&sb, "  %d model-steps and %d test scorings per dataset and seed; %d in all\n",
		b.ModelSteps(), b.Scorings(), b.ModelSteps()*len(datasets)*b.Seeds)
	main := b.Estimate(len(datasets), workers)
	fmt.Fprintf(&sb, "  expected duration ≈ %s with %d workers on free cores (estimate: %.3g s CPU per model-step and %.3g s per test batch at batch 256, measured)\n",
		main.Round(time.Second), workers, StepCPU256.Seconds(), ForwardCPU256.Seconds())
	if ablation != "" {
		var labels []string
		for _, v := range AblationVariants() {
			labels = append(labels, v.Label())
		}
		abl := b.AblationEstimate(workers)
		fmt.Fprintf(&sb, "  ablation on %s: png with %s (and the main table's α=0.5, γ=0.1) from the same phase-1 models: %d more model-steps per seed\n",
			ablation, strings.Join(labels, "; "), b.AblationModelSteps())
		fmt.Fprintf(&sb, "  ablation ≈ %s more; in all ≈ %s\n", abl.Round(time.Second), (main + abl).Round(time.Second))
	}
	return sb.String()
}

// Epochs returns the passes over the training set each model makes
// (warm-up and phase 2).
func (b Budget) Epochs() float64 {
	return float64((b.WarmSteps+b.Steps)*b.Batch) / float64(b.TrainExamples)
}
