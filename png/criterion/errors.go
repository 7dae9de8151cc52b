package criterion

import (
	"fmt"
	"strings"
)

// SyntaxError reports a malformed criterion expression. Col is the 1-based
// column (in characters) where the problem was found.
type SyntaxError struct {
	Col int
	Msg string
}

// Error gives the column and the problem.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("criterion: column %d: %s", e.Col, e.Msg)
}

// UnknownNameError reports a name in an expression that is neither a task,
// a term, drift nor a function. Known lists the task names and Terms the
// term names that were available.
type UnknownNameError struct {
	Name  string
	Col   int
	Known []string
	Terms []string
}

// Error gives the column, the unknown name and the known task and term
// names.
func (e *UnknownNameError) Error() string {
	msg := fmt.Sprintf("criterion: column %d: unknown task %q; known tasks: %s",
		e.Col, e.Name, strings.Join(e.Known, ", "))
	if len(e.Terms) > 0 {
		msg += "; terms: " + strings.Join(e.Terms, ", ")
	}
	return msg
}

// PresetError reports a malformed preset such as "wd:0.2" for three tasks.
type PresetError struct {
	Preset string // the preset name, e.g. "wd"
	Msg    string
}

// Error names the preset and the problem.
func (e *PresetError) Error() string {
	return fmt.Sprintf("criterion: preset %s: %s", e.Preset, e.Msg)
}

// EvalError reports a domain error met while evaluating a criterion: log
// of a non-positive number, square root of a negative number, division by
// zero, a power outside its domain, a value or derivative that overflowed
// to ±Inf or became NaN. Op names the operation ("log", "/", "pow", ...)
// and Expr the sub-expression where it happened.
type EvalError struct {
	Op   string
	Expr string
	Msg  string
}

// Error gives the problem and, when known, the sub-expression.
func (e *EvalError) Error() string {
	if e.Expr == "" {
		return "criterion: " + e.Msg
	}
	return fmt.Sprintf("criterion: %s in %s", e.Msg, e.Expr)
}
