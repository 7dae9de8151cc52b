package criterion

import (
	"fmt"
	"math"
)

// instr is one step of a compiled expression: an operation on the values
// of earlier steps.
type instr struct {
	op   opcode
	val  float64
	idx  int
	args []int
	vars bool  // depends on a loss
	n    *node // for error messages
}

// expr is a compiled single-point criterion. It is safe for concurrent use.
type expr struct {
	tasks []string
	vars  []string // tasks, then terms, then Drift when the expression uses it
	text  string
	root  *node
	tape  []instr
}

// newExpr compiles root into a tape in evaluation order; a node shared by
// several parents (a DAG, as built by presets) is computed once.
func newExpr(tasks, vars []string, root *node) *expr {
	e := &expr{tasks: tasks, vars: vars, text: root.text(vars), root: root}
	seen := map[*node]int{}
	var walk func(n *node) int
	walk = func(n *node) int {
		if k, ok := seen[n]; ok {
			return k
		}
		in := instr{op: n.op, val: n.val, idx: n.idx, n: n, vars: n.op == opVar}
		for _, a := range n.args {
			k := walk(a)
			in.args = append(in.args, k)
			in.vars = in.vars || e.tape[k].vars
		}
		e.tape = append(e.tape, in)
		seen[n] = len(e.tape) - 1
		return len(e.tape) - 1
	}
	walk(root)
	return e
}

// Tasks returns the task names, in loss order.
func (e *expr) Tasks() []string { return append([]string(nil), e.tasks...) }

// Vars returns the names of the values Eval reads: the tasks, the terms,
// and Drift when the expression uses it.
func (e *expr) Vars() []string { return append([]string(nil), e.vars...) }

// String returns the normalised criterion: a re-printed free expression or
// the preset with its references.
func (e *expr) String() string { return e.text }

// Eval returns F at the values of its variables (Vars: the task losses,
// then the terms and drift) and, when grad is not nil, writes ∂F/∂x into
// it by a reverse sweep over the tape. See the package documentation for
// the subgradients chosen at kinks.
func (e *expr) Eval(losses, grad []float64) (float64, error) {
	if len(losses) != len(e.vars) {
		what := "values"
		if len(e.vars) == len(e.tasks) {
			what = "losses"
		}
		return 0, fmt.Errorf("criterion: got %d %s, expected %d (%s %v)", len(losses), what, len(e.vars), e.what(), e.vars)
	}
	if grad != nil && len(grad) != len(e.vars) {
		return 0, fmt.Errorf("criterion: gradient has length %d, expected %d (%s %v)", len(grad), len(e.vars), e.what(), e.vars)
	}
	for i, l := range losses {
		if math.IsNaN(l) || math.IsInf(l, 0) {
			kind := "loss"
			if e.vars[i] == Drift && i >= len(e.tasks) {
				kind = "value"
			}
			return 0, &EvalError{Op: "input", Msg: fmt.Sprintf("%s %s is %v; expected a finite number", kind, e.vars[i], l)}
		}
	}
	v := make([]float64, len(e.tape))
	for k := range e.tape {
		x, err := e.forward(k, v, losses)
		if err != nil {
			return 0, err
		}
		v[k] = x
	}
	f := v[len(v)-1]
	if grad == nil {
		return f, nil
	}
	if err := e.backward(v, grad); err != nil {
		return 0, err
	}
	return f, nil
}

// what names the variable list in messages: "tasks" when it holds only
// the task losses.
func (e *expr) what() string {
	if len(e.vars) == len(e.tasks) {
		return "tasks"
	}
	return "variables"
}

// fail builds the EvalError for step k.
func (e *expr) fail(k int, format string, a ...any) error {
	in := e.tape[k]
	return &EvalError{Op: in.op.String(), Expr: in.n.text(e.vars), Msg: fmt.Sprintf(format, a...)}
}

// forward computes the value of step k from earlier values in v.
func (e *expr) forward(k int, v, losses []float64) (float64, error) {
	in := &e.tape[k]
	var a, b float64
	if len(in.args) > 0 {
		a = v[in.args[0]]
	}
	if len(in.args) > 1 {
		b = v[in.args[1]]
	}
	var x float64
	switch in.op {
	case opConst:
		return in.val, nil
	case opVar:
		return losses[in.idx], nil
	case opAdd:
		x = a + b
	case opSub:
		x = a - b
	case opMul:
		x = a * b
	case opDiv:
		if b == 0 {
			return 0, e.fail(k, "division by zero (divisor is 0)")
		}
		x = a / b
	case opNeg:
		x = -a
	case opLog:
		if a <= 0 {
			return 0, e.fail(k, "log of non-positive value %g", a)
		}
		x = math.Log(a)
	case opExp:
		x = math.Exp(a)
	case opSqrt:
		if a < 0 {
			return 0, e.fail(k, "sqrt of negative value %g", a)
		}
		x = math.Sqrt(a)
	case opAbs:
		x = math.Abs(a)
	case opSin:
		x = math.Sin(a)
	case opCos:
		x = math.Cos(a)
	case opTanh:
		x = math.Tanh(a)
	case opPow:
		switch {
		case a < 0 && b != math.Trunc(b):
			return 0, e.fail(k, "pow of negative base %g to non-integer exponent %g", a, b)
		case a == 0 && b < 0:
			return 0, e.fail(k, "pow of zero to negative exponent %g (division by zero)", b)
		case a <= 0 && e.tape[in.args[1]].vars:
			return 0, e.fail(k, "pow with non-positive base %g and an exponent that depends on the losses (undefined for nearby exponents)", a)
		}
		x = math.Pow(a, b)
	case opMin, opMax:
		x = v[in.args[argExtreme(in, v)]]
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, e.fail(k, "%s overflowed to %v", in.op, x)
	}
	return x, nil
}

// argExtreme returns the position (in in.args) of the first argument that
// attains the minimum (opMin) or maximum (opMax).
func argExtreme(in *instr, v []float64) int {
	best := 0
	for j := 1; j < len(in.args); j++ {
		x, y := v[in.args[j]], v[in.args[best]]
		if in.op == opMin && x < y || in.op == opMax && x > y {
			best = j
		}
	}
	return best
}

// backward accumulates adjoints from the last step to the first and writes
// the adjoints of the loss variables into grad.
func (e *expr) backward(v, grad []float64) error {
	adj := make([]float64, len(v))
	adj[len(adj)-1] = 1
	for i := range grad {
		grad[i] = 0
	}
	for k := len(e.tape) - 1; k >= 0; k-- {
		in := &e.tape[k]
		g := adj[k]
		if g == 0 || !in.vars {
			continue
		}
		var a, b int
		if len(in.args) > 0 {
			a = in.args[0]
		}
		if len(in.args) > 1 {
			b = in.args[1]
		}
		switch in.op {
		case opVar:
			grad[in.idx] += g
		case opAdd:
			adj[a] += g
			adj[b] += g
		case opSub:
			adj[a] += g
			adj[b] -= g
		case opMul:
			adj[a] += g * v[b]
			adj[b] += g * v[a]
		case opDiv:
			adj[a] += g / v[b]
			adj[b] -= g * v[k] / v[b]
		case opNeg:
			adj[a] -= g
		case opLog:
			adj[a] += g / v[a]
		case opExp:
			adj[a] += g * v[k]
		case opSqrt:
			if v[k] == 0 {
				return e.fail(k, "sqrt has an infinite derivative at 0")
			}
			adj[a] += g / (2 * v[k])
		case opAbs:
			// Subgradient 0 at 0.
			switch {
			case v[a] > 0:
				adj[a] += g
			case v[a] < 0:
				adj[a] -= g
			}
		case opSin:
			adj[a] += g * math.Cos(v[a])
		case opCos:
			adj[a] -= g * math.Sin(v[a])
		case opTanh:
			adj[a] += g * (1 - v[k]*v[k])
		case opPow:
			base, ex := v[a], v[b]
			if e.tape[a].vars && ex != 0 {
				if base == 0 && ex < 1 {
					return e.fail(k, "pow has an infinite derivative at base 0 with exponent %g", ex)
				}
				adj[a] += g * ex * math.Pow(base, ex-1)
			}
			if e.tape[b].vars && base != 0 {
				adj[b] += g * v[k] * math.Log(base)
			}
		case opMin, opMax:
			// At ties the first argument attaining the extreme gets the
			// whole derivative.
			adj[in.args[argExtreme(in, v)]] += g
		}
	}
	for i, g := range grad {
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return &EvalError{Op: "gradient", Expr: e.text, Msg: fmt.Sprintf("derivative with respect to %s is %v", e.vars[i], g)}
		}
	}
	return nil
}
