package backend

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/paretonav/paretonav/backend/internal/loss"
)

// Task is one training objective: a loss of kind Loss between the ONNX
// value Output and the data array Target.
type Task struct {
	Name   string // used in criteria
	Loss   string // a loss kind (Losses)
	Output string // ONNX value (graph output or any node output) read
	Target string // data array holding the target ("" for a kind without target, "output")
	// IgnoreIndex is the target value skipped by nll and ce (PyTorch's
	// ignore_index, default -100); key "ignore_index".
	IgnoreIndex int64
	// Options holds every key=value given, as written.
	Options map[string]string
}

// LossKinds returns the names of the loss kinds, sorted.
func LossKinds() []string {
	var out []string
	for _, k := range loss.Kinds() {
		out = append(out, k.Name)
	}
	return out
}

// LossKind describes a loss kind (its record in backend's loss registry):
// what a task of it reads and accepts. The command line, its reference
// and the Python package show these records.
type LossKind struct {
	Name    string `json:"name"`
	Summary string `json:"summary"` // what the loss is, in one line
	// Target says what the target array holds, for the output the loss
	// reads (for a kind without target: that it takes none).
	Target string `json:"target"`
	// NeedsTarget: a task of the kind names a target array.
	NeedsTarget bool `json:"needs_target"`
	// IntegerTarget: the targets are class indices (int64 arrays).
	IntegerTarget bool         `json:"integer_target"`
	Options       []LossOption `json:"options"`
	// Metrics is the family of metrics an evaluation reports for the
	// kind (MetricsClasses, MetricsDepth, MetricsNormals), "" for none.
	Metrics string `json:"metrics"`
}

// LossOption is an integer option of a loss kind, key=value in a task
// spec.
type LossOption struct {
	Key     string `json:"key"`
	Doc     string `json:"doc"`
	Default int64  `json:"default"`
}

// The metric families of LossKind.Metrics.
const (
	MetricsClasses = loss.Classes // mIoU and pixel accuracy, or accuracy per example
	MetricsDepth   = loss.Depth   // absolute and relative depth errors
	MetricsNormals = loss.Normals // angles between predicted and target normals
)

// Losses returns every loss kind, sorted by name.
func Losses() []LossKind {
	var out []LossKind
	for _, k := range loss.Kinds() {
		out = append(out, lossKind(k))
	}
	return out
}

// Loss returns the loss kind named name.
func Loss(name string) (LossKind, bool) {
	k := loss.Lookup(name)
	if k == nil {
		return LossKind{}, false
	}
	return lossKind(k), true
}

func lossKind(k *loss.Kind) LossKind {
	out := LossKind{Name: k.Name, Summary: k.Summary, Target: k.Target, NeedsTarget: k.TargetShape != nil,
		IntegerTarget: k.IntegerTarget, Options: []LossOption{}, Metrics: k.Metrics}
	for _, o := range k.Options {
		out.Options = append(out.Options, LossOption{Key: o.Key, Doc: o.Doc, Default: o.Default})
	}
	return out
}

// IntegerTarget reports whether the targets of loss kind name are class
// indices (nll, ce) rather than values in the output's units.
func IntegerTarget(name string) bool {
	k := loss.Lookup(name)
	return k != nil && k.IntegerTarget
}

// ParseTask parses "NAME:LOSS:OUTPUT:TARGET[:key=value,...]". TARGET may be
// empty (or "-") only for a loss kind that reads no target ("output").
func ParseTask(s string) (Task, error) {
	parts := strings.SplitN(s, ":", 5)
	if len(parts) < 3 {
		return Task{}, fmt.Errorf("backend: task %q: expected NAME:LOSS:OUTPUT:TARGET[:key=value,...]", s)
	}
	for len(parts) < 4 {
		parts = append(parts, "")
	}
	t := Task{Name: parts[0], Loss: parts[1], Output: parts[2], Target: parts[3], IgnoreIndex: -100, Options: map[string]string{}}
	if t.Target == "-" {
		t.Target = ""
	}
	if t.Name == "" || strings.ContainsAny(t.Name, " \t()+-*/,") {
		return Task{}, fmt.Errorf("backend: task %q: name %q must be non-empty and contain no spaces, operators or commas", s, t.Name)
	}
	kind := loss.Lookup(t.Loss)
	if kind == nil {
		return Task{}, fmt.Errorf("backend: task %q: unknown loss %q (known: %s)", s, t.Loss, strings.Join(LossKinds(), ", "))
	}
	if t.Output == "" {
		return Task{}, fmt.Errorf("backend: task %q: the ONNX output is missing", s)
	}
	if t.Target == "" && kind.TargetShape != nil {
		return Task{}, fmt.Errorf("backend: task %q: loss %q needs a target array", s, t.Loss)
	}
	if len(parts) == 5 && parts[4] != "" {
		for _, kv := range strings.Split(parts[4], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return Task{}, fmt.Errorf("backend: task %q: option %q is not key=value", s, kv)
			}
			if !slices.Contains(kind.Keys(), k) {
				return Task{}, fmt.Errorf("backend: task %q: loss %q takes no option %q (accepted: %v)", s, t.Loss, k, kind.Keys())
			}
			t.Options[k] = v
			i, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return Task{}, fmt.Errorf("backend: task %q: %s %q is not an integer", s, k, v)
			}
			if k == "ignore_index" {
				t.IgnoreIndex = i
			}
		}
	}
	return t, nil
}

// head is what task t's loss head is built for.
func (t Task) head() loss.Head {
	return loss.Head{Task: t.Name, Kind: t.Loss, Output: t.Output, IgnoreIndex: t.IgnoreIndex}
}

// String formats t back into the task syntax.
func (t Task) String() string {
	s := t.Name + ":" + t.Loss + ":" + t.Output + ":" + t.Target
	if len(t.Options) > 0 {
		keys := make([]string, 0, len(t.Options))
		for k := range t.Options {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			keys[i] = k + "=" + t.Options[k]
		}
		s += ":" + strings.Join(keys, ",")
	}
	return s
}
