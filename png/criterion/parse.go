package criterion

import (
	"fmt"
	"strings"
)

// maxDepth bounds the nesting of parentheses and unary minus so that a
// hostile expression cannot exhaust the stack.
const maxDepth = 200

// Parse reads a criterion over the given task names: either a free
// expression or a preset.
//
// A free expression uses numbers (2, 0.5, .5, 1e-3), task names, the binary
// operators + - * /, unary minus, parentheses and the functions log exp sqrt
// abs sin cos tanh (one argument), pow(a, b), min(a, b, ...) and
// max(a, b, ...) (two or more arguments). '^' and '**' are rejected: write
// pow(a, b). A name followed by '(' is a function call; any other name must
// be a task, so a task may be called "exp" as long as it is not called.
//
// A preset is NAME:r1,...,rm with one reference per task (see the package
// documentation): "wd:0.2,0.8", "ratio:1,2", "cosine:0.2,0.4" (two tasks
// only). "energy" is a multi-point criterion read by ParseMulti.
//
// Task names must be identifiers (a letter or '_' then letters, digits,
// '_') and distinct. Errors are *SyntaxError (with the column),
// *UnknownNameError (listing the tasks) or *PresetError.
func Parse(expr string, tasks []string) (Criterion, error) {
	if err := checkTasks(tasks); err != nil {
		return nil, err
	}
	tasks = append([]string(nil), tasks...)
	if name, args, ok := strings.Cut(expr, ":"); ok {
		return parsePreset(strings.TrimSpace(name), args, tasks)
	}
	trimmed := strings.TrimSpace(expr)
	if !contains(tasks, trimmed) {
		switch trimmed {
		case "energy":
			return nil, &PresetError{Preset: "energy", Msg: "energy is a multi-point criterion over several models; use it with --models N (ParseMulti), not as a single-model criterion"}
		case "wd", "ratio", "cosine":
			return nil, &PresetError{Preset: trimmed, Msg: fmt.Sprintf("needs one reference per task: %s:r1,...,r%d", trimmed, len(tasks))}
		}
	}
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, tasks: tasks}
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
	return newExpr(tasks, root, root.text(tasks)), nil
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
		if seen[t] {
			return fmt.Errorf("criterion: task name %q appears twice; expected distinct names", t)
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
//	primary = number | task | func "(" expr { "," expr } ")" | "(" expr ")"
type parser struct {
	toks  []token
	pos   int
	tasks []string
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
		for i, name := range p.tasks {
			if name == t.text {
				return vr(i), nil
			}
		}
		if _, isFunc := funcs[t.text]; isFunc {
			return nil, &SyntaxError{Col: p.peek().col, Msg: fmt.Sprintf("expected '(' after function %s", t.text)}
		}
		return nil, &UnknownNameError{Name: t.text, Col: t.col, Known: append([]string(nil), p.tasks...)}
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
		if contains(p.tasks, name.text) {
			msg = fmt.Sprintf("task %s is not a function; expected an operator between it and '('", name.text)
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
