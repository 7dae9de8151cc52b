package job

import (
	"fmt"
	"strings"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
)

// EvalBatch is eval's default batch size.
const EvalBatch = 256

// EvalConfig is an eval job as the eval command's flags give it.
type EvalConfig struct {
	Model string   // MODEL.onnx
	Data  []string // --data sources
	ModelConfig
	Batch int
	Limit int // the first Limit examples (0: all)
	// GradOut, when set, receives the task gradients (NPZ); Force
	// overwrites it.
	GradOut string
	Force   bool
	// ConfigFile is the --config file the flags were read from, an input
	// --grad-out may not overwrite.
	ConfigFile string `json:"-"`
}

// EvalOutcome is what an eval job reports (eval --json, a batch job's
// result).
type EvalOutcome struct {
	Examples int            `json:"examples"`
	Tasks    map[string]Num `json:"tasks"`
	G        Num            `json:"g"`
	GradOut  string         `json:"grad_out,omitempty"`
	// Metrics are the tasks' metrics (front.Meter), pooled over every
	// evaluated pixel: "metrics": {"TASK": {"miou": ..., ...}}.
	Metrics map[string]map[string]Num `json:"metrics,omitempty"`

	// Names are the tasks in order and Eval the pass itself.
	Names []string  `json:"-"`
	Eval  *DataEval `json:"-"`
}

// EvalRun is a resolved eval job: model and data loaded and checked.
type EvalRun struct {
	cfg   *EvalConfig
	md    *backend.Model
	tasks []backend.Task
	ds    *finetune.Dataset
	// Memory is the expected peak, checked against the limit.
	Memory *MemoryPlan
	// Warnings are found by Prepare (arrays converted to the element type
	// that reads them).
	Warnings []string
}

// Prepare checks c and loads the model and data (through l, which may be
// nil), checking them against each other.
func (c *EvalConfig) Prepare(l *Loader) (*EvalRun, error) {
	if len(c.Data) == 0 {
		return nil, missingData("data", "the data")
	}
	if c.Batch < 1 {
		return nil, fmt.Errorf("--batch %d: want at least 1", c.Batch)
	}
	if c.Limit < 0 {
		return nil, fmt.Errorf("--limit %d: want 0 (all) or a positive count", c.Limit)
	}
	// Checked before any work like every destination (Destinations), and
	// again once the model names its external data files.
	dests := func(m *importer.Model) error {
		if c.GradOut == "" {
			return nil
		}
		d := &Destinations{Force: c.Force}
		d.ModelInput("model", c.Model, m)
		d.Sources("--data", c.Data)
		d.Input("--config file", c.ConfigFile)
		d.Output("--grad-out", c.GradOut)
		return d.Check()
	}
	if err := dests(nil); err != nil {
		return nil, err
	}
	setup, err := c.ModelConfig.setup()
	if err != nil {
		return nil, err
	}
	im, md, err := setup.open(l, c.Model)
	if err != nil {
		return nil, err
	}
	if err := dests(im); err != nil {
		return nil, err
	}
	bind, err := setup.binding(md, c.Model)
	if err != nil {
		return nil, err
	}
	ds, err := bind.Load(l, "--data", c.Data, c.Limit, c.Batch)
	if err != nil {
		return nil, err
	}
	mem, err := PlanMemory(md, ds, c.Batch, 1, 0, c.MaxMemory)
	if err != nil {
		return nil, err
	}
	return &EvalRun{cfg: c, md: md, tasks: setup.tasks, ds: ds, Memory: mem, Warnings: bind.Warnings}, nil
}

// Run evaluates every task and writes the gradients when asked.
func (e *EvalRun) Run() (*EvalOutcome, error) {
	c, md := e.cfg, e.md
	res, err := Evaluate(md, e.ds, c.Batch, true, e.tasks)
	if err != nil {
		return nil, fmt.Errorf("eval %s on %s: %w", c.Model, strings.Join(c.Data, ","), err)
	}
	if c.GradOut != "" {
		if err := writeGradients(c.GradOut, md, res); err != nil {
			return nil, err
		}
	}
	names := md.Tasks()
	return &EvalOutcome{Examples: res.Examples, Tasks: named(names, res.Losses), G: Num(res.G), GradOut: c.GradOut,
		Metrics: NumMetrics(res.Metrics), Names: names, Eval: res}, nil
}

// Eval prepares and runs the eval job c.
func Eval(l *Loader, c *EvalConfig) (*EvalOutcome, error) {
	e, err := c.Prepare(l)
	if err != nil {
		return nil, err
	}
	return e.Run()
}

// writeGradients writes res.Jac as "TASK/INITIALIZER" float32 arrays.
func writeGradients(path string, md *backend.Model, res *DataEval) error {
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
