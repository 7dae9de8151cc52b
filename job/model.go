package job

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
)

// ParseTasks reads the task specs given to --task
// (NAME:LOSS:OUTPUT:TARGET[:key=value]); at least one is required and
// names are unique.
func ParseTasks(specs []string) ([]backend.Task, error) {
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

// ParseTerms reads the term specs given to --term (same syntax as
// --task): losses a criterion may use by name that are not tasks. Names
// are unique and differ from the tasks'.
func ParseTerms(specs []string, tasks []backend.Task) ([]backend.Task, error) {
	seen := map[string]bool{}
	for _, t := range tasks {
		seen[t.Name] = true
	}
	var out []backend.Task
	for _, s := range specs {
		t, err := backend.ParseTask(s)
		if err != nil {
			return nil, fmt.Errorf("--term: %w", err)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("--term %q: name %q is already a task's or another term's", s, t.Name)
		}
		seen[t.Name] = true
		out = append(out, t)
	}
	return out, nil
}

// ParseMaps reads the input=array pairs given to --map.
func ParseMaps(specs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range specs {
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

// ModelOptions builds backend.Options from --bn (frozen or train) and
// --freeze.
func ModelOptions(bn string, freeze []string) (backend.Options, error) {
	if bn != "frozen" && bn != "train" {
		return backend.Options{}, fmt.Errorf("--bn %q: want frozen or train", bn)
	}
	return backend.Options{BatchNorm: bn, Freeze: freeze}, nil
}

// ModelConfig is how a job reads its ONNX model: the tasks, the data
// arrays feeding its inputs, BatchNormalization and frozen initializers.
type ModelConfig struct {
	Tasks  []string `flag:"task"`   // --task specs
	Terms  []string `flag:"term"`   // --term specs: losses a criterion may read that are not tasks
	Maps   []string `flag:"map"`    // --map INPUT=ARRAY
	BN     string   `flag:"bn"`     // --bn: frozen or train
	Freeze []string `flag:"freeze"` // --freeze globs
	Untie  bool     `flag:"untie"`  // --untie: give each node its own copy of a shared trainable initializer
	// MaxMemory is --max-memory (e.g. 12GB): the most a job may use; ""
	// for what the machine or cgroup allows (AvailableMemory). A resumed
	// run may set it anew (it changes no result).
	MaxMemory string `flag:"max-memory,free"`
}

// TuneLoopBytes is the memory the training loop holds beside the step for
// m rows of J (tasks and terms) and n trainable parameters:
// finetune.LoopVectors vectors of float32 (the backend's model shares θ
// with the loop, finetune.SharedParams), less the finetune.LentVectors it
// borrows from the step's pool between evaluations (TuneLentBytes), and
// the scratch of PNG's direction within Adam's bound
// (png.ConstrainScratchBytes).
func TuneLoopBytes(m, n int) int64 {
	return (finetune.LoopVectors-finetune.LentVectors)*4*int64(n) + png.ConstrainScratchBytes(m, n)
}

// TuneLentBytes is what the training loop borrows from the step's pool of
// activation buffers between evaluations for n trainable parameters
// (finetune.ScratchLender; MemoryPlan.Lent).
func TuneLentBytes(n int) int64 { return finetune.LentVectors * 4 * int64(n) }

// resolve parses the tasks, maps and options; the terms go into the
// options (backend.Options.Terms).
func (mc ModelConfig) resolve() ([]backend.Task, map[string]string, backend.Options, error) {
	tasks, err := ParseTasks(mc.Tasks)
	if err != nil {
		return nil, nil, backend.Options{}, err
	}
	maps, err := ParseMaps(mc.Maps)
	if err != nil {
		return nil, nil, backend.Options{}, err
	}
	opt, err := ModelOptions(mc.BN, mc.Freeze)
	if err != nil {
		return nil, nil, backend.Options{}, err
	}
	if opt.Terms, err = ParseTerms(mc.Terms, tasks); err != nil {
		return nil, nil, backend.Options{}, err
	}
	opt.Untie = mc.Untie
	return tasks, maps, opt, nil
}

// modelSetup is what a job resolves once from its ModelConfig to open its
// ONNX models and bind data arrays to them: the tasks, the input=array
// maps, the backend options (the terms among them) and the memory budget.
// Every job that reads a model (tune, front, eval, bench step) goes the
// same way: setup, open within the budget, binding.
type modelSetup struct {
	tasks  []backend.Task
	maps   map[string]string
	opt    backend.Options
	budget importer.Budget
}

// setup parses mc's tasks, maps and options (resolve) and resolves its
// memory budget (ResolveBudget).
func (mc ModelConfig) setup() (*modelSetup, error) {
	tasks, maps, opt, err := mc.resolve()
	if err != nil {
		return nil, err
	}
	budget, err := ResolveBudget(mc.MaxMemory)
	if err != nil {
		return nil, err
	}
	return &modelSetup{tasks: tasks, maps: maps, opt: opt, budget: budget}, nil
}

// open reads the model at path (through l, which may be nil) within the
// budget and prepares it for the tasks (OpenModelWithin).
func (s *modelSetup) open(l *Loader, path string) (*importer.Model, *backend.Model, error) {
	return OpenModelWithin(l, path, s.budget, s.tasks, s.opt)
}

// binding returns the Binding of data arrays to net, opened from path,
// after checking the maps against its inputs (Binding.Check).
func (s *modelSetup) binding(net *backend.Model, path string) (Binding, error) {
	b := Binding{Budget: s.budget, Model: net, Tasks: s.tasks, Terms: s.opt.Terms, Maps: s.maps, ModelKey: modelKey(path, s.opt)}
	return b, b.Check()
}

// OpenModel loads the ONNX model at path (through l, which may be nil)
// and prepares it for tasks. The model it returns no longer holds the
// trainable initializers' values (backend.Model.ReleaseModelData): save it
// with the backend model's Weights.
func OpenModel(l *Loader, path string, tasks []backend.Task, opt backend.Options) (*importer.Model, *backend.Model, error) {
	return OpenModelWithin(l, path, importer.Budget{}, tasks, opt)
}

// OpenModelWithin is OpenModel reading the model within b
// (importer.LoadWithin: a regular file whose data fit).
func OpenModelWithin(l *Loader, path string, b importer.Budget, tasks []backend.Task, opt backend.Options) (*importer.Model, *backend.Model, error) {
	m, err := l.ModelWithin(path, b)
	if err != nil {
		return nil, nil, err
	}
	opt.MaxBytes, opt.MaxBytesFrom = b.Bytes, b.From
	md, err := backend.Open(m, tasks, opt)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := md.ReleaseModelData(); err != nil { // θ holds the weights; Save gets them from Weights
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, md, nil
}

// SharedWarning describes the trainable initializers of net (the model at
// path) that several nodes read, which training ties together, or returns
// "" when there are none. tune and front print it once.
func SharedWarning(path string, net *backend.Model) string {
	sh := net.SharedInitializers()
	if len(sh) == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %d trainable initializer(s) read by several nodes will be trained as one (PyTorch's export merges equal initializers; --untie gives each node its own copy):", path, len(sh))
	for _, s := range sh {
		fmt.Fprintf(&sb, "\n  %s: %s", s.Name, strings.Join(s.Consumers, ", "))
		if !slices.Equal(s.Readers, s.Consumers) {
			fmt.Fprintf(&sb, " (through Identity: %s)", strings.Join(s.Readers, ", "))
		}
	}
	return sb.String()
}
