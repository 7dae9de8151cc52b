package graph

import (
	"fmt"
	"strings"

	"github.com/paretonav/paretonav/internal/termsafe"
)

// LimitError reports a node that uses an op in a way backend does not
// support by design (a 3-D pool, MaxPool's column-major indices, integer
// data computed at run time, ...), as opposed to an op it does not know
// (*UnsupportedError). Open returns it, possibly joined with other errors:
// use errors.As.
type LimitError struct {
	Node   string
	OpType string
	Opset  int64
	// Reason says what is not supported, e.g. "storage_order=1".
	Reason string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("node %q (%s, opset %d): %s is not supported", e.Node, termsafe.Name(e.OpType), e.Opset, e.Reason)
}

// LimitErr returns a *LimitError for node n of the model b builds.
func (b *Builder) LimitErr(n interface {
	GetName() string
	GetOpType() string
}, format string, args ...any) error {
	return &LimitError{Node: n.GetName(), OpType: n.GetOpType(), Opset: b.Opset, Reason: fmt.Sprintf(format, args...)}
}

// UnsupportedOp is one node backend cannot lower.
type UnsupportedOp struct {
	OpType string
	Domain string
	Node   string
	Opset  int64
}

// UnsupportedError lists every node of a model that backend cannot lower.
type UnsupportedError struct {
	Ops []UnsupportedOp
}

func (e *UnsupportedError) Error() string {
	var sb strings.Builder
	// No "backend: " here: Open and the others prefix every error once.
	fmt.Fprintf(&sb, "%d unsupported node(s):", len(e.Ops))
	for _, o := range e.Ops {
		op := o.OpType
		if o.Domain != "" {
			op = o.Domain + "." + op
		}
		fmt.Fprintf(&sb, "\n\t%s (node %q, opset %d)", termsafe.Name(op), o.Node, o.Opset)
	}
	return sb.String()
}
