package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/bench"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/job"
	"github.com/paretonav/paretonav/models/datasets"
	"github.com/paretonav/paretonav/png"
)

// benchDataSeed fixes the pairing of the generated datasets: every seed
// of the benchmark sees the same data (seeds vary the initialisation and
// the batch order), as in the paper.
const benchDataSeed = 0

var benchCommand = &ucli.Command{
	Name:  "bench",
	Usage: "reproduce the PNG paper's benchmarks",
	Subcommands: []*ucli.Command{withConfig(&ucli.Command{
		Name:  "multimnist",
		Usage: "linear scalarization vs MGD vs EPO vs PNG (energy), 5 LeNet2 models each, on MultiMNIST-style datasets",
		Description: `For every dataset and seed: 5 LeNet2 models are trained with linear
scalarization (first-task weights 0.1, 0.3, 0.5, 0.7, 0.9); from them each
method trains the same number of further steps: linear (continued), MGD, EPO
(model k toward the preference ray (w_k, 1 − w_k), linear's weights) and PNG
with the energy criterion over the 5 loss vectors. Adam lr 1e-3, batch 256.
Checkpoints collected during the second phase are scored on the test set;
hypervolume (losses below 0.6,0.6; accuracies above 0.6,0.6, the paper's
references) and IGD+ against the
non-dominated union of all methods' checkpoints are reported as mean ± std
over seeds, with a paired t-test of PNG against each baseline.

The phase-2 runs (one per method of 5 models, one per linear model) and the
scorings share --workers, largest first.

Budgets: medium (the paper's protocol at a tenth of its epochs: 5 seeds,
8,192/2,048 pairs, 10 epochs of which the last 4 are phase 2, a checkpoint
every half epoch: about 52 minutes for the three datasets on two free
cores, 65 with --ablation), small (3 seeds, 20,480/1,000 pairs, 300+75
steps), paper (120,000/20,000 pairs, 100 epochs, 5 seeds: days), tiny (a
smoke test in seconds). The plan and its expected duration are printed
first; --plan prints them and stops.

--ablation adds the paper's α/γ ablation of PNG on multimnist: α 0.25 and
0.75 at γ 0.1, γ 0.01 and 0.25 at α 0.5, each 5 models from the same
phase-1 models (the main table's png is α 0.5, γ 0.1), reported as a second
table. Every method's phase-2 dynamics (g, g/ē, the share of steps with
PNG's control on, the first-order descent of each loss) are recorded per
checkpoint in results.json and summarised in results.md.

Datasets are generated from MNIST / Fashion-MNIST (see 'paretonav data';
--layout sener builds Sener & Koltun's geometry) and cached in OUT_DIR/data
as NPZ. Writes OUT_DIR/results.md and results.json.`,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "datasets", Value: "multimnist,multifashion,fashionmnist", Usage: "comma list of `DATASETS`"},
			&ucli.StringFlag{Name: "budget", Value: "small", Usage: "the `BUDGET`: small, medium, paper or tiny"},
			&ucli.IntFlag{Name: "seeds", Usage: "repeat every method with `K` seeds (at least 2)", DefaultText: "the budget's"},
			&ucli.PathFlag{Name: "out-dir", Value: "bench-out", Usage: "write data, results.md and results.json to `DIR`"},
			&ucli.IntFlag{Name: "workers", Value: runtime.NumCPU(), Usage: "train `W` models at once", DefaultText: "the number of CPUs"},
			&ucli.BoolFlag{Name: "ablation", Usage: "add the paper's α/γ ablation of PNG on multimnist (α 0.25, 0.75 at γ 0.1; γ 0.01, 0.25 at α 0.5), sharing the warm-up"},
			&ucli.Float64Flag{Name: "max-tradeoff", Value: png.RobustMaxTradeoff, Usage: "PNG's trade test: a free criterion step that raises the losses by more than `M` times what it lowers them turns the control on (0: none, the paper's method)"},
			&ucli.StringFlag{Name: "energy-scale", Value: finetune.MultiPerModel, Usage: "how the energy's gradients reach PNG's models, `SCALE`: model (each to unit length), shared (all divided by the largest length) or raw"},
			&ucli.BoolFlag{Name: "paper-update", Usage: "PNG hands its direction to Adam as the gradient, as the paper does, instead of posing its constraint on Adam's update"},
			&ucli.Float64Flag{Name: "threshold-cap", Usage: "cap PNG's threshold at `RHO` times its warm-up average (0: no cap, the paper's method)"},
			&ucli.StringFlag{Name: "layout", Value: string(datasets.LayoutOurs), Usage: "the `LAYOUT` of the generated datasets: ours or sener (see 'paretonav data')"},
			&ucli.BoolFlag{Name: "plan", Usage: "print the plan and its expected duration, and stop"},
			jsonFlag,
		},
		Action: runBench,
	}), benchRescoreCommand},
}

func init() { register(benchCommand) }

func runBench(c *ucli.Context) error {
	b, ok := bench.Budgets[c.String("budget")]
	if !ok {
		return fmt.Errorf("--budget %q: want one of %s", c.String("budget"), strings.Join(bench.BudgetNames, ", "))
	}
	if c.IsSet("seeds") {
		b.Seeds = c.Int("seeds")
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("--budget %s / --seeds: %w", b.Name, err)
	}
	var dss []string
	for _, d := range strings.Split(c.String("datasets"), ",") {
		d = strings.TrimSpace(d)
		known := false
		for _, k := range datasets.Kinds {
			known = known || string(k) == d
		}
		if !known {
			return fmt.Errorf("--datasets: %q is not one of %v", d, datasets.Kinds)
		}
		dss = append(dss, d)
	}
	workers := c.Int("workers")
	if workers < 1 {
		return fmt.Errorf("--workers %d: want at least 1", workers)
	}
	thresholdCap := c.Float64("threshold-cap")
	if !(thresholdCap >= 0) || math.IsInf(thresholdCap, 0) {
		return fmt.Errorf("--threshold-cap %v: want a finite number ≥ 0 (0: no cap)", thresholdCap)
	}
	layout, err := datasets.ParseLayout(c.String("layout"))
	if err != nil {
		return fmt.Errorf("--layout %w", err)
	}
	maxTradeoff := c.Float64("max-tradeoff")
	if !(maxTradeoff >= 0) || math.IsInf(maxTradeoff, 0) {
		return fmt.Errorf("--max-tradeoff %v: want a finite number ≥ 0 (0: no trade test)", maxTradeoff)
	}
	energyScale := c.String("energy-scale")
	if err := finetune.CheckMultiScale(energyScale); err != nil {
		return fmt.Errorf("--energy-scale %w", err)
	}
	ablation := ""
	if c.Bool("ablation") {
		if !slices.Contains(dss, string(datasets.MultiMNIST)) {
			return fmt.Errorf("--ablation: runs on %s, as the paper's; --datasets %s lacks it", datasets.MultiMNIST, c.String("datasets"))
		}
		ablation = string(datasets.MultiMNIST)
	}
	plan := b.Describe(dss, workers, ablation)
	if c.Bool("plan") {
		_, err := fmt.Fprint(c.App.Writer, plan)
		return err
	}
	fmt.Fprint(c.App.ErrWriter, plan)
	dir := c.Path("out-dir")
	if dir == "" {
		return errors.New("--out-dir: required")
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return fmt.Errorf("--out-dir: %w", err)
	}
	data := func(ds, split string, n int, _ int64) (map[string]*importer.Tensor, error) {
		return benchData(filepath.Join(dir, "data"), ds, split, n, layout)
	}
	ctx, stop := signalContext(c)
	defer stop()
	res, err := bench.Run(ctx, bench.Config{Budget: b, Datasets: dss, Data: data, Workers: workers, Log: c.App.ErrWriter, Ablation: ablation,
		ThresholdCap: thresholdCap, DataLayout: string(layout), MaxTradeoff: maxTradeoff, EnergyScale: energyScale, PaperUpdate: c.Bool("paper-update")})
	if err != nil {
		return err
	}
	return writeBenchResults(c, dir, res)
}

// writeBenchResults writes res as DIR/results.md and DIR/results.json and
// prints the table (or, with --json, the JSON).
func writeBenchResults(c *ucli.Context, dir string, res *bench.Results) error {
	var md strings.Builder
	if err := bench.WriteMarkdown(&md, res); err != nil {
		return err
	}
	js, err := json.MarshalIndent(res.JSON(), "", "  ")
	if err != nil {
		return err
	}
	mdPath, jsPath := filepath.Join(dir, "results.md"), filepath.Join(dir, "results.json")
	if err := job.WriteFile(mdPath, []byte(md.String())); err != nil {
		return fmt.Errorf("--out-dir: %w", err)
	}
	if err := job.WriteFile(jsPath, append(js, '\n')); err != nil {
		return fmt.Errorf("--out-dir: %w", err)
	}
	if c.Bool(jsonFlag.Name) {
		_, err := fmt.Fprintf(c.App.Writer, "%s\n", js)
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s\nwrote %s and %s\n", md.String(), mdPath, jsPath)
	return err
}

var benchRescoreCommand = withConfig(withInterspersed(&ucli.Command{
	Name:      "rescore",
	Usage:     "recompute a benchmark's metrics and table from the checkpoints its results.json holds",
	ArgsUsage: "RESULTS.json",
	Description: `Reads the scored checkpoints (test losses and accuracies of every model
at every checkpoint) of an earlier 'bench multimnist' run and measures them
again with this version's metrics: hypervolumes at the paper's references,
IGD+ against the union of the methods, mean ± std over seeds and paired
t-tests. Nothing is retrained. Writes OUT_DIR/results.md and results.json;
the input is never overwritten (an --out-dir holding it is refused).`,
	Flags: []ucli.Flag{
		&ucli.PathFlag{Name: "out-dir", Usage: "write results.md and results.json to `DIR` (required)"},
		jsonFlag,
	},
	Action: runBenchRescore,
}))

func runBenchRescore(c *ucli.Context) error {
	args := positional(c)
	if len(args) != 1 {
		return fmt.Errorf("bench rescore: want one RESULTS.json argument, got %d", len(args))
	}
	in, dir := args[0], c.Path("out-dir")
	if dir == "" {
		return errors.New("bench rescore: --out-dir: required")
	}
	data, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("bench rescore: %w", err)
	}
	res, err := bench.ReadResults(data)
	if err != nil {
		return fmt.Errorf("bench rescore: %s: %w", in, err)
	}
	if same, err := job.SamePath(in, filepath.Join(dir, "results.json")); err != nil {
		return fmt.Errorf("bench rescore: %w", err)
	} else if same {
		return fmt.Errorf("bench rescore: --out-dir %s holds the input %s: choose another folder", dir, in)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out-dir: %w", err)
	}
	res.Rescore()
	return writeBenchResults(c, dir, res)
}

// benchData returns n pairs of a dataset split built with layout, from the
// NPZ cache in dir or generated (and cached) with models/datasets. The
// cache names the layout unless it is the default.
func benchData(dir, ds, split string, n int, layout datasets.Layout) (map[string]*importer.Tensor, error) {
	name := fmt.Sprintf("%s_%s_%d_seed%d", ds, split, n, benchDataSeed)
	if layout != datasets.LayoutOurs {
		name += "_" + string(layout)
	}
	path := filepath.Join(dir, name+".npz")
	if a, err := npz.Read(path); err == nil {
		return a, nil
	}
	sp := datasets.Train
	if split == "test" {
		sp = datasets.Test
	}
	a, err := datasets.Multi(datasets.Kind(ds), datasets.Options{Split: sp, Limit: n, Seed: benchDataSeed, Layout: layout})
	if err != nil {
		return nil, err
	}
	if got := a["x"].Shape[0]; got < n {
		return nil, fmt.Errorf("%s %s: %d pairs available, the budget needs %d", ds, split, got, n)
	}
	if err := npz.Write(path, a); err != nil {
		return nil, fmt.Errorf("caching %s: %w", path, err)
	}
	return a, nil
}
