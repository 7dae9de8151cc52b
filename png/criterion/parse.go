package criterion

import (
	"fmt"
	"strings"
)

// maxDepth bounds the nesting of parentheses and unary minus so that a
// hostile expression cannot exhaust the stack.
const maxDepth = 200

// Parse reads a criterion over the given task names, and over the terms
// when any are given: either a free expression or a preset, or an
// expression that uses presets as operands.
//
// A free expression uses numbers (2, 0.5, .5, 1e-3), task names, term
// names, drift, the binary operators + - * /, unary minus, parentheses and
// the functions log exp sqrt abs sin cos tanh (one argument), pow(a, b),
// min(a, b, ...) and max(a, b, ...) (two or more arguments). '^' and '**'
// are rejected: write pow(a, b). A name followed by '(' is a function call;
// any other name must be a task, a term or drift, so a task may be called
// "exp" as long as it is not called.
//
// Terms are losses the criterion may use that are not tasks (they take no
// part in the Pareto set); Drift is the squared distance of the trainable
// parameters from their values at the start of the run. Both are values
// of θ whose gradients lie outside the span of the task gradients; the
// caller supplies them (see Vars).
//
// A preset is NAME:r1,...,rm with one reference per task (see the package
// documentation): "wd:0.2,0.8", "ratio:1,2", "cosine:0.2,0.4" (two tasks
// only). Inside an expression a preset is one operand whose references run
// to the next + * / or parenthesis ("wd:0.2,0.8 + 0.01*drift"); inside a
// function's arguments put it in parentheses. "energy" is a multi-point
// criterion read by ParseMulti.
//
// Task and term names must be identifiers (a letter or '_' then letters,
// digits, '_'), distinct, and not "drift". Errors are *SyntaxError (with
// the column), *UnknownNameError (listing the tasks and terms) or
// *PresetError.
func Parse(expr string, tasks []string, terms ...string) (Criterion, error) {
	if err := checkTasks(tasks); err != nil {
		return nil, err
	}
	if err := checkTerms(terms, tasks); err != nil {
		return nil, err
	}
	tasks = append([]string(nil), tasks...)
	vars := append(append([]string(nil), tasks...), terms...)
	trimmed := strings.TrimSpace(expr)
	if !contains(vars, trimmed) {
		switch trimmed {
		case "energy":
			return nil, &PresetError{Preset: "energy", Msg: "energy is a multi-point criterion: it spreads several models over the front; use it with --models N (front or synth), not with one model"}
		case "wd", "ratio", "cosine":
			return nil, &PresetError{Preset: trimmed, Msg: fmt.Sprintf("needs one reference per task: %s:r1,...,r%d", trimmed, len(tasks))}
		}
	}
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, tasks: tasks, terms: terms, vars: vars}
	if p.peek().kind == tokEOF {
		return nil, &SyntaxError{Col: 1, Msg: "empty criterion; expected an expression over the tasks " + strings.Join(tasks, ", ")}
	}
	root, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		msg := "expected an operator (+ - * /) or end of expression, found " + t.describe()
		if t.text == ")" {
			msg = "unmatched ')'"
		}
		return nil, &SyntaxError{Col: t.col, Msg: msg}
	}
	if p.drift {
		vars = append(vars, Drift)
	}
	return newExpr(tasks, vars, root), nil
}

// checkTasks rejects task lists that expressions could not refer to.
func checkTasks(tasks []string) error {
	if len(tasks) == 0 {
		return fmt.Errorf("criterion: no tasks; expected at least one task name")
	}
	seen := map[string]bool{}
	for _, t := range tasks {
		if !isIdent(t) {
			return fmt.Errorf("criterion: task name %q is not an identifier; expected a letter or '_' followed by letters, digits or '_'", t)
		}
		if t == Drift {
			return fmt.Errorf("criterion: task name %q is reserved (the parameters' squared distance from the start of the run); expected another name", t)
		}
		if seen[t] {
			return fmt.Errorf("criterion: task name %q appears twice; expected distinct names", t)
		}
		seen[t] = true
	}
	return nil
}

// checkTerms rejects term names that are not identifiers, repeat, or are
// a task's name or drift.
func checkTerms(terms, tasks []string) error {
	seen := map[string]bool{}
	for _, t := range tasks {
		seen[t] = true
	}
	for _, t := range terms {
		switch {
		case !isIdent(t):
			return fmt.Errorf("criterion: term name %q is not an identifier; expected a letter or '_' followed by letters, digits or '_'", t)
		case t == Drift:
			return fmt.Errorf("criterion: term name %q is reserved (the parameters' squared distance from the start of the run); expected another name", t)
		case seen[t]:
			return fmt.Errorf("criterion: term name %q is also a task's or another term's; expected distinct names", t)
		}
		seen[t] = true
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parser is a recursive-descent parser over the token list:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/") unary }
//	unary   = "-" unary | primary
//	primary = number | task | term | "drift" | preset
//	        | func "(" expr { "," expr } ")" | "(" expr ")"
//	preset  = name ":" ref { "," ref }   (one token, see scanRefs)
type parser struct {
	toks  []token
	pos   int
	tasks []string
	terms []string
	vars  []string // tasks then terms; drift is the next index
	drift bool     // the expression uses drift
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token { t := p.toks[p.pos]; p.pos++; return t }

func (p *parser) expr(depth int) (*node, error) {
	left, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	for t := p.peek(); t.text == "+" || t.text == "-"; t = p.peek() {
		p.next()
		right, err := p.term(depth)
		if err != nil {
			return nil, err
		}
		op := opAdd
		if t.text == "-" {
			op = opSub
		}
		left = bin(op, left, right)
	}
	return left, nil
}

func (p *parser) term(depth int) (*node, error) {
	left, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for t := p.peek(); t.text == "*" || t.text == "/"; t = p.peek() {
		p.next()
		right, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		op := opMul
		if t.text == "/" {
			op = opDiv
		}
		left = bin(op, left, right)
	}
	return left, nil
}

func (p *parser) unary(depth int) (*node, error) {
	if depth > maxDepth {
		return nil, &SyntaxError{Col: p.peek().col, Msg: fmt.Sprintf("expression nested more than %d levels deep", maxDepth)}
	}
	if p.peek().text == "-" {
		p.next()
		a, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return fn(opNeg, a), nil
	}
	return p.primary(depth)
}

func (p *parser) primary(depth int) (*node, error) {
	t := p.next()
	switch {
	case t.kind == tokNum:
		return num(t.num), nil
	case t.kind == tokIdent:
		if p.peek().text == "(" {
			return p.call(t, depth)
		}
		for i, name := range p.vars {
			if name == t.text {
				return vr(i), nil
			}
		}
		if t.text == Drift {
			p.drift = true
			return vr(len(p.vars)), nil
		}
		if _, isFunc := funcs[t.text]; isFunc {
			return nil, &SyntaxError{Col: p.peek().col, Msg: fmt.Sprintf("expected '(' after function %s", t.text)}
		}
		return nil, &UnknownNameError{Name: t.text, Col: t.col, Known: append([]string(nil), p.tasks...), Terms: append([]string(nil), p.terms...)}
	case t.kind == tokPreset:
		return parsePreset(t.text, t.args, p.tasks)
	case t.text == "(":
		e, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.text != ")" {
			return nil, &SyntaxError{Col: c.col, Msg: fmt.Sprintf("expected ')' to close '(' at column %d, found %s", t.col, c.describe())}
		}
		return e, nil
	case t.text == "+":
		return nil, &SyntaxError{Col: t.col, Msg: "unary '+' is not allowed; expected a number, a task name, '-' or '('"}
	}
	return nil, &SyntaxError{Col: t.col, Msg: "expected a number, a task name, '-' or '(', found " + t.describe()}
}

// call parses the argument list of function name (the '(' is next).
func (p *parser) call(name token, depth int) (*node, error) {
	f, ok := funcs[name.text]
	if !ok {
		msg := fmt.Sprintf("unknown function %q; functions are %s", name.text, strings.Join(funcNames, ", "))
		switch {
		case contains(p.tasks, name.text):
			msg = fmt.Sprintf("task %s is not a function; expected an operator between it and '('", name.text)
		case contains(p.terms, name.text) || name.text == Drift:
			msg = fmt.Sprintf("%s is not a function; expected an operator between it and '('", name.text)
		}
		return nil, &SyntaxError{Col: name.col, Msg: msg}
	}
	open := p.next()
	var args []*node
	for {
		a, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		c := p.next()
		if c.text == ")" {
			break
		}
		if c.text != "," {
			return nil, &SyntaxError{Col: c.col, Msg: fmt.Sprintf("expected ',' or ')' to close %s( at column %d, found %s", name.text, open.col, c.describe())}
		}
	}
	switch {
	case f.arity > 0 && len(args) != f.arity:
		return nil, &SyntaxError{Col: name.col, Msg: fmt.Sprintf("%s takes %d argument(s), got %d", name.text, f.arity, len(args))}
	case f.arity < 0 && len(args) < 2:
		return nil, &SyntaxError{Col: name.col, Msg: fmt.Sprintf("%s takes two or more arguments, got %d", name.text, len(args))}
	}
	return fn(f.op, args...), nil
}
