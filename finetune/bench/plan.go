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
//     criterion.
//     All use Adam (lr 1e-3) and batch 256; every method sees the same
//     batches.
//  3. Checkpoints: each model's parameters are collected at Checkpoints
//     evenly spaced steps of phase 2 (the last one at its end); a method's
//     point set is all 5 × Checkpoints models, scored on the test set.
//  4. Measures: hypervolume of the test losses below (0.6, 0.6) and of
//     the test accuracies above (0.6, 0.6) (LossRef, AccRef: the paper's
//     references); IGD+ of losses and of (negated)
//     accuracies against the non-dominated union of every method's
//     points for that dataset and seed.
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
// machine after the backend's GEMM and executor work: one training step of
// LeNet2 (m = 2: losses and both task gradients) at batch 256 takes 0.15–0.21
// s of CPU time (BenchmarkStep/lenet2, the lower figure on an idle machine,
// the higher with another job running); a forward pass at batch 256 about
// 0.075 s (Outputs). Costs scale about linearly with the batch size. The
// estimate uses the loaded figures, to leave a margin.
const (
	StepCPU256    = 200 * time.Millisecond
	ForwardCPU256 = 75 * time.Millisecond
)

// Budgets by name. "small" fits in an hour on two free cores (Estimate:
// about 50 minutes with the four methods); "paper" is the paper's scale: 120,000/20,000 pairs,
// 100 epochs per model (60 of linear warm-up, the paper's MGD protocol, then
// 40 of each method), one checkpoint per epoch over the last 40 epochs (the
// paper collects from epoch 60 on), 5 seeds; "tiny" is a smoke
// test of the whole pipeline in seconds.
var Budgets = map[string]Budget{
	"tiny":  {Name: "tiny", TrainExamples: 64, TestExamples: 32, Seeds: 2, WarmSteps: 2, Steps: 2, Checkpoints: 2, Batch: 16, Models: 5},
	"small": {Name: "small", TrainExamples: 20480, TestExamples: 1000, Seeds: 3, WarmSteps: 300, Steps: 75, Checkpoints: 3, Batch: 256, Models: 5},
	"paper": {Name: "paper", TrainExamples: 120000, TestExamples: 20000, Seeds: 5,
		WarmSteps: 60 * 469, Steps: 40 * 469, Checkpoints: 40, Batch: 256, Models: 5},
}

// BudgetNames lists the budgets in the order the CLI shows them.
var BudgetNames = []string{"small", "paper", "tiny"}

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
// seed) run: Models warm-up runs, then Models per method in phase 2.
func (b Budget) ModelSteps() int {
	return b.Models*b.WarmSteps + len(Methods)*b.Models*b.Steps
}

// Scorings returns the number of models scored on the test set per
// (dataset, seed).
func (b Budget) Scorings() int { return len(Methods) * b.Models * b.Checkpoints }

// Estimate returns the expected duration of the budget over datasets with
// workers models trained at once on as many free cores, from the measured
// per-step costs (StepCPU256, ForwardCPU256) scaled to the batch size.
// Scoring is one loss pass and one output pass over the test set. Data
// generation and graph compilation (a few seconds) are left out.
func (b Budget) Estimate(datasets, workers int) time.Duration {
	if workers < 1 {
		workers = 1
	}
	scale := float64(b.Batch) / 256
	train := time.Duration(float64(b.ModelSteps()) * scale * float64(StepCPU256) / float64(workers))
	batches := (b.TestExamples + b.Batch - 1) / b.Batch
	score := time.Duration(float64(b.Scorings()*2*batches) * scale * float64(ForwardCPU256))
	return time.Duration(datasets*b.Seeds) * (train + score)
}

// Describe returns the plan in a few lines: sizes, steps, and the expected
// duration.
func (b Budget) Describe(datasets []string, workers int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "bench plan (budget %s): datasets %s; %d seeds\n", b.Name, strings.Join(datasets, ", "), b.Seeds)
	fmt.Fprintf(&sb, "  data: %d training and %d test pairs per dataset; batch %d; Adam lr 1e-3\n", b.TrainExamples, b.TestExamples, b.Batch)
	fmt.Fprintf(&sb, "  phase 1: %d linear-scalarization models × %d steps (weights 0.1..0.9)\n", b.Models, b.WarmSteps)
	fmt.Fprintf(&sb, "  phase 2: linear, mgd, epo (preferences as linear's weights), png (energy) × %d models × %d steps from the phase-1 models; checkpoints at steps %v\n",
		b.Models, b.Steps, b.CheckpointSteps())
	fmt.Fprintf(&sb, "  %d model-steps and %d test scorings per dataset and seed; %d in all\n",
		b.ModelSteps(), b.Scorings(), b.ModelSteps()*len(datasets)*b.Seeds)
	fmt.Fprintf(&sb, "  expected duration ≈ %s with %d workers on free cores (estimate: %.2f s CPU per step at batch 256, measured)\n",
		b.Estimate(len(datasets), workers).Round(time.Second), workers, StepCPU256.Seconds())
	return sb.String()
}
