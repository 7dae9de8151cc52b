package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/job"
)

var benchStepCommand = withInterspersed(withConfig(&ucli.Command{
	Name:      "step",
	Usage:     "time tune's steps (forward, one backward pass per task, the direction, Adam's update) of an ONNX model",
	ArgsUsage: "MODEL.onnx",
	Description: `Loads MODEL.onnx and the first --batch examples of --data, builds the step's
graph (timed together as load + build), runs one untimed step and --steps
timed ones of tune's loop on that batch (Adam at tune's default --lr, F the
sum of the losses), and prints the median step time (forward pass, backward
passes and direction), the median and slowest whole tune step (with Adam's
update), the shares of the forward pass, the backward passes and the
direction as tune computes it (PNG's direction and its update held within
Adam's per-weight step bound), the step's floating-point operations counted
from its graph (convolutions and matrix products: as direct convolutions,
and as executed, Winograd's where it runs) with the rates they give, the
rate of a float32 GEMM measured in the same run before the model is loaded
(the machine's practical peak) and the step's share of it, and the
process's peak resident memory. bench/torch_mtan.py times the same step of
the MTAN model (paretonav models mtan) in PyTorch.

--tune then runs a real tune of --steps+1 steps on the same model, data and
batch in the same process (PNG, Adam at --tune-lr, the sum of the tasks as
criterion, its model written to a temporary folder and removed) and prints
the median of its steps after the first, timed between the loop's step
records (evaluation, direction, optimizer, log and checkpoints: what a tune
step costs), and its ratio to the median tune step of the bench (which then
runs at --tune-lr too: the rate decides whether the bounded update runs, and
both sides must time the same computation).`,
	Flags: []ucli.Flag{dataFlag, taskFlag, mapFlag, bnFlag, freezeFlag, maxMemoryFlag, batchFlag(2),
		&ucli.IntFlag{Name: "steps", Value: 3, Usage: "timed steps `K`"},
		&ucli.StringFlag{Name: "cpuprofile", Usage: "write a pprof CPU profile of the timed steps to `FILE` (go tool pprof FILE)"},
		&ucli.StringFlag{Name: "memprofile", Usage: "write a pprof allocation profile of the run to `FILE` (go tool pprof -sample_index=alloc_space FILE)"},
		&ucli.BoolFlag{Name: "tune", Usage: "also time a real tune's steps on the same model and data, in the same process"},
		&ucli.Float64Flag{Name: "tune-lr", Value: 1e-5, Usage: "the learning rate `LR` of --tune's Adam (small: random weights diverge at tune's default)"},
		&ucli.StringFlag{Name: "tune-cpuprofile", Usage: "write a pprof CPU profile of --tune's timed steps to `FILE`"}, jsonFlag},
	Action: runBenchStep,
}))

func init() { benchCommand.Subcommands = append(benchCommand.Subcommands, benchStepCommand) }

func runBenchStep(c *ucli.Context) error {
	args := positional(c)
	if len(args) != 1 {
		return fmt.Errorf("bench step: want one MODEL.onnx argument, got %d (%s)", len(args), strings.Join(args, " "))
	}
	cfg := &job.BenchStepConfig{Model: args[0], Data: c.StringSlice(dataFlag.Name),
		ModelConfig: modelConfigFromFlags(c), Batch: c.Int("batch"), Steps: c.Int("steps"),
		Tune: c.Bool("tune"), TuneLR: c.Float64("tune-lr")}
	for _, pf := range []struct {
		flag string
		w    *io.Writer
	}{{"cpuprofile", &cfg.CPUProfile}, {"memprofile", &cfg.MemProfile}, {"tune-cpuprofile", &cfg.TuneCPUProfile}} {
		path := c.String(pf.flag)
		if path == "" {
			continue
		}
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("--%s: %w", pf.flag, err)
		}
		defer f.Close()
		*pf.w = f
	}
	res, err := job.BenchStep(cfg)
	if err != nil {
		return err
	}
	if c.Bool(jsonFlag.Name) {
		return writeJSON(c.App.Writer, res)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "%s: %d parameters, batch %d, %d tasks\n", res.Model, res.Params, res.Batch, res.Tasks)
	ph := res.LoadPhases
	fmt.Fprintf(w, "  load + build   %.2f s (model %.2f s, data %.2f s, memory plan %.2f s", res.LoadBuildS, ph.ModelS, ph.DataS, ph.PlanS)
	if ph.DiskBytes > 1<<20 {
		fmt.Fprintf(w, "; %.0f MB read from disk, not the page cache", float64(ph.DiskBytes)/1e6)
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "  step (median)  %.3f s over %d steps (forward, backward passes, direction)\n", res.MedianS, len(res.StepS))
	fmt.Fprintf(w, "  tune step      %.3f s median, slowest %.2f× the median (with Adam's update)\n", res.TuneMedianS, res.MaxOverMedian)
	fmt.Fprintf(w, "  shares         forward %.0f%%, backward passes %.0f%%, direction %.1f%% (within Adam's step bound, as tune computes it)\n",
		100*res.ForwardShare, 100*res.BackwardShare, 100*res.DirectionShare)
	f := res.FLOPs
	fmt.Fprintf(w, "  FLOPs          %.3g direct (forward %.3g, %.0f%% of it in Winograd convolutions), %.3g executed: %.1f GFLOP/s direct, %.1f executed\n",
		float64(f.Direct), float64(f.Forward), 100*float64(f.Winograd)/max(1, float64(f.Direct)), float64(f.Executed), res.GFLOPSDirect, res.GFLOPSExecuted)
	fmt.Fprintf(w, "  peak (GEMM)    %.1f GFLOP/s measured (%d×%d float32 products): the step executes at %.0f%% of it\n",
		res.PeakGFLOPS, job.PeakGEMMSize, job.PeakGEMMSize, 100*res.PeakShare)
	fmt.Fprintf(w, "  allocated      %.0f objects, %s per step\n", res.AllocsPerStep, backend.FormatBytes(int64(res.AllocBytesPerStep)))
	if t := res.Tune; t != nil {
		fmt.Fprintf(w, "  --tune step    %.3f s (median over %d steps of a real tune), %.3f× the step; %.0f objects, %s allocated per step\n",
			t.MedianS, len(t.StepS), t.Ratio, t.AllocsPerStep, backend.FormatBytes(int64(t.AllocBytesPerStep)))
	}
	fmt.Fprintf(w, "  peak RSS       %s (%s)\n", backend.FormatBytes(res.PeakRSS), res.Memory)
	return nil
}
