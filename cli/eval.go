package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune/npz"
	"github.com/paretonav/paretonav/importer"
)

// evalBatch is eval's default batch size.
const evalBatch = 256

var evalCommand = withInterspersed(withConfig(&ucli.Command{
	Name:      "eval",
	Usage:     "task losses and g(θ) of an ONNX model on data (NPZ, .npy, IDX)",
	ArgsUsage: "MODEL.onnx",
	Description: `Evaluates every --task on the first --limit examples of --data (default
all), in file order, --batch at a time. Model inputs are read from the arrays
of the same names (--map input=array to rename); task targets from the arrays
the tasks name. Losses are the batch means averaged over batches weighted by
batch size, and so are the task gradients, from which g(θ) = min over the
simplex of |Σ ω_i ∇ℓ_i|² is computed (0 on the Pareto set).

--grad-out writes the gradients as an NPZ: array "TASK/INITIALIZER" is the
gradient of that task's mean loss with respect to that trainable initializer
(float32, its shape; zeros where the task does not reach it).`,
	Flags: []ucli.Flag{
		dataFlag, taskFlag, mapFlag, bnFlag, freezeFlag, batchFlag(evalBatch),
		&ucli.IntFlag{Name: "limit", Usage: "use the first `N` examples (0: all)", Category: "Data"},
		&ucli.PathFlag{Name: "grad-out", Usage: "write the task gradients to `G.npz`", Category: "Output"},
		&ucli.BoolFlag{Name: "force", Usage: "overwrite --grad-out if it exists", Category: "Output"},
		jsonFlag,
	},
	Action: runEval,
}))

func init() { register(evalCommand) }

// evalJSON is what eval --json prints.
type evalJSON struct {
	Examples int             `json:"examples"`
	Tasks    map[string]jnum `json:"tasks"`
	G        jnum            `json:"g"`
	GradOut  string          `json:"grad_out,omitempty"`
}

func runEval(c *ucli.Context) error {
	args := positional(c)
	if len(args) != 1 {
		return fmt.Errorf("eval: want one MODEL.onnx argument, got %d (%s)", len(args), strings.Join(args, " "))
	}
	model := args[0]
	sources, err := dataSources(c, dataFlag.Name, "the data")
	if err != nil {
		return err
	}
	dataPath := strings.Join(sources, ",")
	batch, limit := c.Int("batch"), c.Int("limit")
	if batch < 1 {
		return fmt.Errorf("--batch %d: want at least 1", batch)
	}
	if limit < 0 {
		return fmt.Errorf("--limit %d: want 0 (all) or a positive count", limit)
	}
	gradOut := c.Path("grad-out")
	if gradOut != "" && !c.Bool("force") {
		if _, err := os.Stat(gradOut); err == nil {
			return fmt.Errorf("--grad-out %s: file exists (use --force to overwrite)", gradOut)
		}
	}
	tasks, err := parseTasks(c)
	if err != nil {
		return err
	}
	maps, err := parseMaps(c)
	if err != nil {
		return err
	}
	opt, err := modelOptions(c)
	if err != nil {
		return err
	}
	_, md, err := openModel(model, tasks, opt)
	if err != nil {
		return err
	}
	bind := dataBinding{md: md, tasks: tasks, maps: maps}
	if err := bind.check(); err != nil {
		return err
	}
	ds, err := bind.load("--data", sources, limit, batch)
	if err != nil {
		return err
	}
	res, err := evaluateData(md, ds, batch, true)
	if err != nil {
		return fmt.Errorf("eval %s on %s: %w", model, dataPath, err)
	}
	if gradOut != "" {
		if err := writeGradients(gradOut, md, res); err != nil {
			return err
		}
	}
	names := md.Tasks()
	if c.Bool(jsonFlag.Name) {
		out := evalJSON{Examples: res.Examples, Tasks: map[string]jnum{}, G: jnum(res.G), GradOut: gradOut}
		for i, n := range names {
			out.Tasks[n] = jnum(res.Losses[i])
		}
		return writeJSON(c.App.Writer, out)
	}
	return evalSummary(c.App.Writer, model, res, names, gradOut)
}

func evalSummary(w io.Writer, model string, res *dataEval, names []string, gradOut string) error {
	fmt.Fprintf(w, "%s on %d examples:\n", model, res.Examples)
	for i, n := range names {
		fmt.Fprintf(w, "  %-12s %.6f\n", n, res.Losses[i])
	}
	fmt.Fprintf(w, "  g(θ)         %.4g\n", res.G)
	if gradOut != "" {
		fmt.Fprintf(w, "gradients written to %s\n", gradOut)
	}
	return nil
}

// writeGradients writes res.Jac as "TASK/INITIALIZER" float32 arrays.
func writeGradients(path string, md *backend.Model, res *dataEval) error {
	arrays := map[string]*importer.Tensor{}
	for i, task := range md.Tasks() {
		row := res.Jac.Row(i)
		for _, p := range md.Trainable() {
			size := 1
			for _, d := range p.Shape {
				size *= d
			}
			name := task + "/" + p.Name
			arrays[name] = importer.NewFloat32(name, p.Shape, append([]float32(nil), row[p.Offset:p.Offset+size]...))
		}
	}
	if err := npz.Write(path, arrays); err != nil {
		return fmt.Errorf("--grad-out: %w", err)
	}
	return nil
}
