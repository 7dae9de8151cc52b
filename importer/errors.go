package importer

import (
	"errors"
	"fmt"
	"strings"
)

// Error is one problem found in a model: where it is (a node, an
// initializer, a graph input, the model header) and what is wrong.
type Error struct {
	// Where names the offending part, e.g. `node "Conv_3" (Conv)` or
	// `initializer "fc.weight"`; empty for model-wide problems.
	Where string
	// Msg says what is wrong and what was expected.
	Msg string
}

// Error implements error.
func (e *Error) Error() string {
	if e.Where == "" {
		return e.Msg
	}
	return e.Where + ": " + e.Msg
}

// ErrorList collects every problem found in a model so that all of them can
// be reported at once, in the manner of go/scanner.ErrorList.
type ErrorList []*Error

// Add appends a problem found at where.
func (l *ErrorList) Add(where, format string, args ...any) {
	*l = append(*l, &Error{Where: where, Msg: fmt.Sprintf(format, args...)})
}

// Error lists every problem, one per line after a count.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(l))
	for _, e := range l {
		b.WriteString("\n\t")
		b.WriteString(e.Error())
	}
	return b.String()
}

// Err returns l as an error, or nil if l is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// ErrUnsupported is wrapped by errors from EvalNode for ops, attributes or
// element types it cannot evaluate (as opposed to invalid inputs).
var ErrUnsupported = errors.New("not supported")
