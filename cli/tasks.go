package cli

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
)

// Flags shared by the commands that read an ONNX model and data (eval,
// tune, front, inspect).
var (
	taskFlag = &ucli.StringSliceFlag{Name: "task", Category: "Model",
		Usage: "one task per flag; `SPEC` is NAME:LOSS:OUTPUT:TARGET[:key=value], with loss " +
			strings.Join(backend.LossKinds(), "|") + " between ONNX value OUTPUT and data array TARGET"}
	mapFlag = &ucli.StringSliceFlag{Name: "map", Category: "Data",
		Usage: "feed a model input from a data array of another name, given as `INPUT=ARRAY` (default: the array named like the input)"}
	bnFlag = &ucli.StringFlag{Name: "bn", Value: "frozen", Category: "Model",
		Usage: "BatchNormalization `MODE`: frozen (running statistics) or train (batch statistics)"}
	freezeFlag = &ucli.StringSliceFlag{Name: "freeze", Category: "Model",
		Usage: "do not train initializers matching `GLOB` (path.Match; repeatable)"}
	dataFlag = &ucli.StringSliceFlag{Name: "data", Category: "Data", TakesFile: true,
		Usage: "the model inputs and task targets, from `SOURCE`: FILE.npz (its arrays by name), " + sourceUsage}
)

// sourceUsage ends the usage of every flag that takes data sources
// (finetune.ParseSource).
const sourceUsage = "NAME=FILE.npy (one array, NAME), or NAME=FILE for an MNIST IDX file, gzip or not " +
	"(images become float32 [N,1,H,W] in [0,1], 0..255 with NAME=FILE:raw; labels int64 [N]); " +
	"repeat the flag or separate sources with commas to merge them"

// dataSources returns the sources given to the data flag name (--data,
// --val), or an error saying what is needed when there are none.
func dataSources(c *ucli.Context, name, what string) ([]string, error) {
	specs := c.StringSlice(name)
	if len(specs) == 0 {
		return nil, fmt.Errorf("--%s: required (%s: FILE.npz, NAME=FILE.npy or NAME=FILE.idx, repeatable)", name, what)
	}
	return specs, nil
}

// batchFlag is --batch with a per-command default.
func batchFlag(def int) *ucli.IntFlag {
	return &ucli.IntFlag{Name: "batch", Value: def, Usage: "examples per batch `B`", Category: "Data"}
}

// parseTasks reads every --task; at least one is required.
func parseTasks(c *ucli.Context) ([]backend.Task, error) {
	specs := c.StringSlice(taskFlag.Name)
	if len(specs) == 0 {
		return nil, errors.New("--task: at least one task NAME:LOSS:OUTPUT:TARGET is required")
	}
	out := make([]backend.Task, 0, len(specs))
	seen := map[string]bool{}
	for _, s := range specs {
		t, err := backend.ParseTask(s)
		if err != nil {
			return nil, fmt.Errorf("--task: %w", err)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("--task %q: task name %q used twice", s, t.Name)
		}
		seen[t.Name] = true
		out = append(out, t)
	}
	return out, nil
}

// parseMaps reads every --map input=array.
func parseMaps(c *ucli.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range c.StringSlice(mapFlag.Name) {
		in, arr, ok := strings.Cut(s, "=")
		in, arr = strings.TrimSpace(in), strings.TrimSpace(arr)
		if !ok || in == "" || arr == "" {
			return nil, fmt.Errorf("--map %q: want input=array", s)
		}
		if _, dup := out[in]; dup {
			return nil, fmt.Errorf("--map %q: input %q mapped twice", s, in)
		}
		out[in] = arr
	}
	return out, nil
}

// modelOptions builds backend.Options from --bn and --freeze.
func modelOptions(c *ucli.Context) (backend.Options, error) {
	bn := c.String(bnFlag.Name)
	if bn != "frozen" && bn != "train" {
		return backend.Options{}, fmt.Errorf("--bn %q: want frozen or train", bn)
	}
	return backend.Options{BatchNorm: bn, Freeze: c.StringSlice(freezeFlag.Name)}, nil
}

// openModel loads the ONNX model at path and prepares it for tasks.
func openModel(path string, tasks []backend.Task, opt backend.Options) (*importer.Model, *backend.Model, error) {
	m, err := importer.Load(path)
	if err != nil {
		return nil, nil, err
	}
	md, err := backend.Open(m, tasks, opt)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, md, nil
}

// dataBinding says which data array feeds each model input and task
// target.
type dataBinding struct {
	md    *backend.Model
	tasks []backend.Task
	maps  map[string]string // model input → array
}

// uses lists the arrays md needs.
func (b dataBinding) uses() []finetune.Use {
	var out []finetune.Use
	for _, in := range b.md.Inputs() {
		arr := in.Name
		if a, ok := b.maps[in.Name]; ok {
			arr = a
		}
		out = append(out, finetune.Use{Key: in.Name, Array: arr, Role: fmt.Sprintf("model input %q", in.Name)})
	}
	for _, t := range b.tasks {
		if t.Target == "" {
			continue
		}
		out = append(out, finetune.Use{Key: t.Target, Array: t.Target, Role: fmt.Sprintf("target of task %q", t.Name)})
	}
	return out
}

// check validates --map against the model's inputs.
func (b dataBinding) check() error {
	names := map[string]bool{}
	var list []string
	for _, in := range b.md.Inputs() {
		names[in.Name] = true
		list = append(list, in.Name)
	}
	keys := make([]string, 0, len(b.maps))
	for k := range b.maps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !names[k] {
			return fmt.Errorf("--map %s=%s: the model has no input %q (inputs: %s)", k, b.maps[k], k, strings.Join(list, ", "))
		}
	}
	return nil
}

// load reads the data sources specs given to flag (finetune.LoadArrays:
// NPZ archives, .npy and IDX files, merged), binds them to the model
// (first limit examples when limit > 0) and checks them before any work:
// every array present with one number of examples, model inputs of a
// floating type and of the model's shape, targets of the shape each loss
// needs and class labels in range. Errors name the sources, the array and
// the input or task.
func (b dataBinding) load(flag string, specs []string, limit, batch int) (*finetune.Dataset, error) {
	arrays, err := finetune.LoadArrays(specs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	path := strings.Join(specs, ",")
	ds, err := finetune.Bind(arrays, b.uses(), limit, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if ds.Len() == 0 {
		return nil, fmt.Errorf("%s %s: no examples", flag, path)
	}
	if err := b.checkInputs(ds, path); err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	// Target shapes and label ranges: the model checks them per batch;
	// every batch is checked here, before the first step.
	N := ds.Len()
	for i := 0; i < N; i += batch {
		j := min(i+batch, N)
		if err := b.md.CheckBatch(ds.Slice(i, j)); err != nil {
			where := ""
			if N > batch {
				where = fmt.Sprintf(" (examples %d..%d)", i, j-1)
			}
			return nil, fmt.Errorf("%s %s%s: %w", flag, path, where, err)
		}
	}
	return ds, nil
}

// checkInputs checks element types and shapes of the arrays bound to the
// model inputs, naming the data array and the input.
func (b dataBinding) checkInputs(ds *finetune.Dataset, path string) error {
	var errs []error
	for _, in := range b.md.Inputs() {
		arr := in.Name
		if m, ok := b.maps[in.Name]; ok {
			arr = m
		}
		u := finetune.Use{Key: in.Name, Array: arr}
		a := ds.Arrays[u.Key]
		if !a.IsFloat() {
			errs = append(errs, fmt.Errorf("%s: array %q for model input %q has element type %v; the model expects %v (floating point)",
				path, u.Array, in.Name, a.Type, in.Type))
			continue
		}
		if in.Shape == nil {
			continue
		}
		ok := len(a.Shape) == len(in.Shape)
		for i := 1; ok && i < len(in.Shape); i++ {
			ok = in.Shape[i] < 0 || in.Shape[i] == a.Shape[i]
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%s: array %q for model input %q has shape %v; the model expects %s",
				path, u.Array, in.Name, a.Shape, fmtDims(in.Shape)))
		}
	}
	return errors.Join(errs...)
}

// fmtDims writes a shape with dynamic dimensions as "N".
func fmtDims(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		if d < 0 {
			parts[i] = "N"
		} else {
			parts[i] = fmt.Sprint(d)
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// dataEval is the outcome of one pass over a data set.
type dataEval struct {
	Examples int
	Losses   []float64    // per task: batch means weighted by batch size
	Jac      png.Jacobian // the same average of the task gradients (when asked)
	G        float64      // g from png.Gram + png.MinNorm on Jac (when asked)
}

// evaluateData runs md over ds in file order, batch examples at a time,
// and averages losses (and, with grad, task gradients) over the batches
// weighted by their sizes.
func evaluateData(md *backend.Model, ds *finetune.Dataset, batch int, grad bool) (*dataEval, error) {
	m, n := len(md.Tasks()), md.NumParams()
	N := ds.Len()
	res := &dataEval{Examples: N, Losses: make([]float64, m)}
	var jac png.Jacobian
	sum := make([]float64, 0)
	if grad {
		jac = png.NewJacobian(m, n)
		sum = make([]float64, m*n)
	}
	tmp := make([]float64, m)
	for i := 0; i < N; i += batch {
		j := min(i+batch, N)
		w := float64(j-i) / float64(N)
		var jp *png.Jacobian
		if grad {
			jp = &jac
		}
		if err := md.Evaluate(ds.Slice(i, j), tmp, jp); err != nil {
			return nil, fmt.Errorf("examples %d..%d: %w", i, j-1, err)
		}
		for t := range tmp {
			res.Losses[t] += w * tmp[t]
		}
		if grad {
			for k, v := range jac.Data {
				sum[k] += w * float64(v)
			}
		}
	}
	for t, v := range res.Losses {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("task %q: loss is %v", md.Tasks()[t], v)
		}
	}
	if grad {
		for k, v := range sum {
			jac.Data[k] = float32(v)
		}
		res.Jac = jac
		K := make([]float64, m*m)
		png.Gram(K, jac, 0)
		_, res.G = png.MinNorm(K, m)
	}
	return res, nil
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
