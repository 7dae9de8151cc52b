package ortcheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
)

// FixtureDir is the folder, relative to the repo root, holding the PyTorch
// reference fixtures written by make_fixtures.py.
const FixtureDir = "backend/testdata/torch"

// Fixture is one PyTorch reference model with its batch and PyTorch's
// answers (see backend/testdata/torch/README.md).
type Fixture struct {
	Name      string // e.g. "lenet2_op13"
	ModelPath string // absolute path of NAME.onnx
	Opset     int
	// Tasks are NAME:LOSS:OUTPUT:TARGET[:k=v] specs as paretonav takes them.
	Tasks []string
	// InputName is the model's single input ("x"); Input its value.
	InputName string
	Input     *importer.Tensor
	// Targets by target name (the TARGET part of a task spec).
	Targets map[string]*importer.Tensor
	// Outputs are PyTorch's float32 outputs; ORT ONNX Runtime's, recorded
	// when the fixture was made (nil if it was not available then).
	Outputs map[string]*importer.Tensor
	ORT     map[string]*importer.Tensor
	// Losses by task name (float64 reference values).
	Losses map[string]float64
	// Grads[task][initializer] is d Losses[task] / d initializer, for every
	// trainable initializer (zeros where the task does not depend on it).
	Grads map[string]map[string]*importer.Tensor
	// Trainable and Buffers list the ONNX initializers that are torch
	// parameters and BatchNorm running statistics.
	Trainable []string
	Buffers   []string
	// StateDictToONNX maps torch state_dict names to initializer names.
	StateDictToONNX map[string]string
	Notes           string
}

type fixtureMeta struct {
	Model           string                `json:"model"`
	Data            string                `json:"data"`
	Opset           int                   `json:"opset"`
	Input           struct{ Name string } `json:"input"`
	Tasks           []string              `json:"tasks"`
	Trainable       []string              `json:"trainable"`
	Buffers         []string              `json:"buffers"`
	StateDictToONNX map[string]string     `json:"state_dict_to_onnx"`
	Notes           string                `json:"notes"`
}

// fixtureDir returns the absolute fixture folder.
func fixtureDir() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", fmt.Errorf("ortcheck: fixtures: %w", err)
	}
	return filepath.Join(root, FixtureDir), nil
}

// FixtureNames lists the PyTorch fixtures (the NAME of every NAME.json),
// sorted.
func FixtureNames() ([]string, error) {
	dir, err := fixtureDir()
	if err != nil {
		return nil, err
	}
	matches, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("ortcheck: fixtures: %w", err)
	}
	names := make([]string, 0, len(matches))
	for _, m := range matches {
		names = append(names, strings.TrimSuffix(filepath.Base(m), ".json"))
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("ortcheck: no fixtures in %s", dir)
	}
	return names, nil
}

// LoadFixture reads the PyTorch fixture NAME (NAME.json and NAME.npz).
// It needs no ONNX Runtime.
func LoadFixture(name string) (*Fixture, error) {
	dir, err := fixtureDir()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		return nil, fmt.Errorf("ortcheck: fixture %s: %w", name, err)
	}
	var meta fixtureMeta
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, fmt.Errorf("ortcheck: fixture %s: %w", name, err)
	}
	arrays, err := npz.Read(filepath.Join(dir, meta.Data))
	if err != nil {
		return nil, fmt.Errorf("ortcheck: fixture %s: %w", name, err)
	}
	f := &Fixture{
		Name:            name,
		ModelPath:       filepath.Join(dir, meta.Model),
		Opset:           meta.Opset,
		Tasks:           meta.Tasks,
		InputName:       meta.Input.Name,
		Targets:         map[string]*importer.Tensor{},
		Outputs:         map[string]*importer.Tensor{},
		Losses:          map[string]float64{},
		Grads:           map[string]map[string]*importer.Tensor{},
		Trainable:       meta.Trainable,
		Buffers:         meta.Buffers,
		StateDictToONNX: meta.StateDictToONNX,
		Notes:           meta.Notes,
	}
	for key, t := range arrays {
		kind, rest, _ := strings.Cut(key, "/")
		t.Name = rest
		switch kind {
		case "input":
			if rest == f.InputName {
				f.Input = t
			}
		case "target":
			f.Targets[rest] = t
		case "output":
			f.Outputs[rest] = t
		case "ort":
			if f.ORT == nil {
				f.ORT = map[string]*importer.Tensor{}
			}
			f.ORT[rest] = t
		case "loss":
			if t.Len() != 1 || !t.IsFloat() {
				return nil, fmt.Errorf("ortcheck: fixture %s: loss %q is not a float scalar", name, rest)
			}
			f.Losses[rest] = t.Float64s()[0]
		case "grad":
			task, init, ok := strings.Cut(rest, "/")
			if !ok {
				return nil, fmt.Errorf("ortcheck: fixture %s: bad gradient key %q", name, key)
			}
			if f.Grads[task] == nil {
				f.Grads[task] = map[string]*importer.Tensor{}
			}
			t.Name = init
			f.Grads[task][init] = t
		default:
			return nil, fmt.Errorf("ortcheck: fixture %s: unexpected array %q", name, key)
		}
	}
	if f.Input == nil {
		return nil, fmt.Errorf("ortcheck: fixture %s: no input/%s array", name, f.InputName)
	}
	return f, nil
}
