// Package loss holds the loss kinds a task may name: one Kind record per
// kind, registered from the file of its family, that says everything
// about it in one place: how a task of it is written (its options), what
// its output and target hold (the target's shape and element type), which
// metrics an evaluation reports for it, how many elements its mean is over
// (for weighting the means of parts of a batch) and how its head is
// appended to the graph. The command line, the documentation and the
// Python package read the records through backend.Losses.
package loss

import (
	"fmt"
	"slices"
	"strings"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer"
)

// Kind is one loss kind.
type Kind struct {
	// Name is how a task spec writes the kind ("nll").
	Name string
	// Summary says in one line what the loss is.
	Summary string
	// Target says what the target array holds, for the output the loss
	// reads (for a kind without target: that it takes none).
	Target string
	// TargetShape gives the shape of the target array for an output of
	// shape out (checked against the data before each build); nil for a
	// kind that reads no target.
	TargetShape func(out []int) ([]int, error)
	// IntegerTarget: the targets are class indices, in [0, C) or the
	// ignored index, stored as int64.
	IntegerTarget bool
	// Options are the keys a task of the kind may set (all integers).
	Options []Option
	// Metrics is the family of metrics an evaluation reports for the
	// kind (Classes, Depth, Normals), "" for none.
	Metrics string
	// Count returns how many elements of target the loss averages over
	// (nil: the batch's examples, for a kind without target). Means over
	// parts of a batch weighted by these counts give the mean over the
	// whole. The error is about target (its shape).
	Count func(target *importer.Tensor, h Head) (int, error)
	// Build appends the loss of a task to the graph: out is the model's
	// value, target the node holding the target array (nil for a kind
	// without target). It returns a scalar node.
	Build func(b *graph.Builder, h Head, out, target graph.Node) (graph.Node, error)
}

// Option is an integer option of a loss kind, "key=value" in a task spec.
type Option struct {
	Key     string
	Doc     string // what it does, in one line
	Default int64
}

// Head is the task a loss head is built for.
type Head struct {
	Task   string // the task's name, which names the head's node
	Kind   string // the loss kind
	Output string // the ONNX value read
	// IgnoreIndex is the target skipped by a kind with the
	// "ignore_index" option.
	IgnoreIndex int64
}

// The metric families (Kind.Metrics).
const (
	Classes = "classes" // confusion of classes: mIoU and pixel accuracy, or accuracy per example
	Depth   = "depth"   // absolute and relative depth errors
	Normals = "normals" // angles between predicted and target normals
)

var kinds = map[string]*Kind{}

// register adds k; the family files call it from init. A name registered
// twice is a programming error.
func register(k Kind) {
	if kinds[k.Name] != nil {
		panic(fmt.Sprintf("loss: kind %q registered twice", k.Name))
	}
	kinds[k.Name] = &k
}

// Lookup returns the kind named name, or nil.
func Lookup(name string) *Kind { return kinds[name] }

// Kinds returns every kind, sorted by name.
func Kinds() []*Kind {
	out := make([]*Kind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b *Kind) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Keys returns the keys of k's options.
func (k *Kind) Keys() []string {
	out := make([]string, len(k.Options))
	for i, o := range k.Options {
		out[i] = o.Key
	}
	return out
}

func sameShape(out []int) ([]int, error) { return append([]int{}, out...), nil }

// classTargetShape: [N, C, d...] → [N, d...].
func classTargetShape(out []int) ([]int, error) {
	if len(out) < 2 {
		return nil, fmt.Errorf("class scores must have shape [N, C, ...], have %v", out)
	}
	return append(append([]int{}, out[0]), out[2:]...), nil
}
