package cli

import (
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/internal/termsafe"
	"github.com/paretonav/paretonav/job"
)

// Flags shared by the commands that read an ONNX model and data (eval,
// tune, front, inspect).
var (
	taskFlag = &ucli.StringSliceFlag{Name: "task", Category: "Model",
		Usage: "one task per flag; `SPEC` is NAME:LOSS:OUTPUT:TARGET[:key=value], with loss " +
			strings.Join(backend.LossKinds(), "|") + " between ONNX value OUTPUT and data array TARGET"}
	termFlag = &ucli.StringSliceFlag{Name: "term", Category: "Model",
		Usage: "a loss the criterion may read by NAME that is not a task (not part of the Pareto set, g or the dual; its exact gradient enters ∇F); `SPEC` as --task; repeatable"}
	mapFlag = &ucli.StringSliceFlag{Name: "map", Category: "Data",
		Usage: "feed a model input from a data array of another name, given as `INPUT=ARRAY` (default: the array named like the input)"}
	bnFlag = &ucli.StringFlag{Name: "bn", Value: "frozen", Category: "Model",
		Usage: "BatchNormalization `MODE`: frozen (running statistics) or train (batch statistics)"}
	maxMemoryFlag = &ucli.StringFlag{Name: "max-memory", Category: "Model",
		Usage: "stop before the first step when the expected peak memory is over `SIZE` (e.g. 12GB, 16GiB); default: what the machine (MemAvailable) or the cgroup (memory.max) allows"}
	freezeFlag = &ucli.StringSliceFlag{Name: "freeze", Category: "Model",
		Usage: "do not train initializers matching `GLOB` (* and ? within a name, [a-z] classes; repeatable)"}
	untieFlag = &ucli.BoolFlag{Name: "untie", Category: "Model",
		Usage: "give each node its own copy of a trainable initializer that several nodes read (PyTorch's export merges equal ones, e.g. zero biases), so that they train independently; the saved model keeps the copies"}
	dataFlag = &ucli.StringSliceFlag{Name: "data", Category: "Data", TakesFile: true,
		Usage: "the model inputs and task targets, from `SOURCE`: FILE.npz (its arrays by name), " + sourceUsage}
)

// sourceUsage ends the usage of every flag that takes data sources
// (finetune.ParseSource).
const sourceUsage = "NAME=FILE.npy (one array, NAME), or NAME=FILE for an MNIST IDX file, gzip or not " +
	"(images become float32 [N,1,H,W] in [0,1], 0..255 with NAME=FILE:raw; labels int64 [N]); " +
	"repeat the flag or separate sources with commas to merge them. " +
	"nyuv2:DIR reads an NYUv2 split as MTAN's preprocessing leaves it (DIR/image, label, depth, normal, one .npy per example: " +
	"image, depth, normal become float32 channels first, label int64 with -1 kept) and folder:DIR any folder with one subfolder " +
	"per array holding 0.npy, 1.npy, … (H×W×C examples become C×H×W): both are read a batch at a time and given alone"

// batchFlag is --batch with a per-command default.
func batchFlag(def int) *ucli.IntFlag {
	return &ucli.IntFlag{Name: "batch", Value: def, Usage: "examples per batch `B`", Category: "Data"}
}

// modelConfigFromFlags reads --task, --term and --untie (tune, front),
// --map, --bn and --freeze.
func modelConfigFromFlags(c *ucli.Context) job.ModelConfig {
	return job.ModelConfig{Tasks: c.StringSlice(taskFlag.Name), Terms: c.StringSlice(termFlag.Name), Maps: c.StringSlice(mapFlag.Name),
		BN: c.String(bnFlag.Name), Freeze: c.StringSlice(freezeFlag.Name), Untie: c.Bool(untieFlag.Name),
		MaxMemory: c.String(maxMemoryFlag.Name)}
}

// withInterspersed lets cmd take flags after its positional arguments
// (`paretonav eval model.onnx --data d.npz`): urfave/cli stops parsing
// flags at the first argument, so the flags left among the arguments are
// set here, before --config is read (so that they win over the file).
// Use positional for the remaining arguments. Required flags cannot be
// declared Required (urfave checks them before this runs): check them in
// the action.
func withInterspersed(cmd *ucli.Command) *ucli.Command {
	before := cmd.Before
	cmd.Before = func(c *ucli.Context) error {
		if _, err := splitArgs(c, true); err != nil {
			return err
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
	return cmd
}

// positional returns the command's arguments that are not flags.
func positional(c *ucli.Context) []string {
	pos, _ := splitArgs(c, false)
	return pos
}

// splitArgs walks c.Args(): flag tokens are set on c when set is true,
// the others are returned.
func splitArgs(c *ucli.Context, set bool) ([]string, error) {
	flags := map[string]ucli.Flag{}
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			flags[n] = f
		}
	}
	args := c.Args().Slice()
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f, ok := flags[name]
		if !ok {
			return nil, fmt.Errorf("flag provided but not defined: %s", a)
		}
		if !hasVal {
			if _, isBool := f.(*ucli.BoolFlag); isBool {
				val = "true"
			} else {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("flag needs an argument: %s", a)
				}
				i++
				val = args[i]
			}
		}
		if set {
			if err := c.Set(f.Names()[0], val); err != nil {
				return nil, fmt.Errorf("invalid value %q for flag %s: %w", val, a, err)
			}
		}
	}
	return pos, nil
}

// printWarnings writes a job's warnings to the command's error stream.
func printWarnings(c *ucli.Context, ws []string) {
	for _, w := range ws {
		fmt.Fprintf(c.App.ErrWriter, "warning: %s\n", termsafe.Text(w))
	}
}
