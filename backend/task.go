package backend

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Task is one training objective: a loss of kind Loss between the ONNX
// value Output and the data array Target.
type Task struct {
	Name   string // used in criteria
	Loss   string // a loss kind (LossKinds)
	Output string // ONNX value (graph output or any node output) read
	Target string // data array holding the target ("" for Loss "output")
	// IgnoreIndex is the target value skipped by nll and ce (PyTorch's
	// ignore_index, default -100); key "ignore_index".
	IgnoreIndex int64
	// Options holds every key=value given, as written.
	Options map[string]string
}

// LossKinds returns the loss kinds backend appends, sorted.
func LossKinds() []string {
	out := make([]string, 0, len(lossHeads))
	for k := range lossHeads {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// taskKeys lists the keys each loss kind accepts.
var taskKeys = map[string][]string{"nll": {"ignore_index"}, "ce": {"ignore_index"}}

// ParseTask parses "NAME:LOSS:OUTPUT:TARGET[:key=value,...]". TARGET may be
// empty (or "-") only for the loss kind "output".
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
	if _, ok := lossHeads[t.Loss]; !ok {
		return Task{}, fmt.Errorf("backend: task %q: unknown loss %q (known: %s)", s, t.Loss, strings.Join(LossKinds(), ", "))
	}
	if t.Output == "" {
		return Task{}, fmt.Errorf("backend: task %q: the ONNX output is missing", s)
	}
	if t.Target == "" && t.Loss != "output" {
		return Task{}, fmt.Errorf("backend: task %q: loss %q needs a target array", s, t.Loss)
	}
	if len(parts) == 5 && parts[4] != "" {
		for _, kv := range strings.Split(parts[4], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return Task{}, fmt.Errorf("backend: task %q: option %q is not key=value", s, kv)
			}
			known := false
			for _, a := range taskKeys[t.Loss] {
				known = known || a == k
			}
			if !known {
				return Task{}, fmt.Errorf("backend: task %q: loss %q takes no option %q (accepted: %v)", s, t.Loss, k, taskKeys[t.Loss])
			}
			t.Options[k] = v
			if k == "ignore_index" {
				i, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return Task{}, fmt.Errorf("backend: task %q: ignore_index %q is not an integer", s, v)
				}
				t.IgnoreIndex = i
			}
		}
	}
	return t, nil
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
