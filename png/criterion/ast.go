package criterion

import (
	"strconv"
	"strings"
)

// opcode is an operation of the expression tree.
type opcode uint8

const (
	opConst opcode = iota
	opVar
	opAdd
	opSub
	opMul
	opDiv
	opNeg
	opLog
	opExp
	opSqrt
	opAbs
	opSin
	opCos
	opTanh
	opPow
	opMin
	opMax
)

// funcs maps function names to opcodes and their arity (-1: two or more).
var funcs = map[string]struct {
	op    opcode
	arity int
}{
	"log":  {opLog, 1},
	"exp":  {opExp, 1},
	"sqrt": {opSqrt, 1},
	"abs":  {opAbs, 1},
	"sin":  {opSin, 1},
	"cos":  {opCos, 1},
	"tanh": {opTanh, 1},
	"pow":  {opPow, 2},
	"min":  {opMin, -1},
	"max":  {opMax, -1},
}

// funcNames lists the functions in the order the documentation gives them.
var funcNames = []string{"log", "exp", "sqrt", "abs", "pow", "sin", "cos", "tanh", "min", "max"}

var opNames = [...]string{
	opConst: "const", opVar: "var", opAdd: "+", opSub: "-", opMul: "*", opDiv: "/",
	opNeg: "unary -", opLog: "log", opExp: "exp", opSqrt: "sqrt", opAbs: "abs",
	opSin: "sin", opCos: "cos", opTanh: "tanh", opPow: "pow", opMin: "min", opMax: "max",
}

func (o opcode) String() string { return opNames[o] }

// node is a vertex of the expression tree. Built trees (presets) may share
// nodes, making a DAG; compile evaluates a shared node once.
type node struct {
	op     opcode
	val    float64 // opConst
	idx    int     // opVar: index into the variables (tasks, terms, drift)
	args   []*node
	preset string // the preset this node is the root of, in normalised form ("" for none)
}

func num(v float64) *node             { return &node{op: opConst, val: v} }
func vr(i int) *node                  { return &node{op: opVar, idx: i} }
func bin(op opcode, a, b *node) *node { return &node{op: op, args: []*node{a, b}} }
func fn(op opcode, a ...*node) *node  { return &node{op: op, args: a} }

// prec is the binding strength used by the printer.
func (n *node) prec() int {
	if n.preset != "" {
		return 4 // printed as one operand: NAME:REFS
	}
	switch n.op {
	case opAdd, opSub:
		return 1
	case opMul, opDiv:
		return 2
	case opNeg:
		return 3
	}
	return 4
}

// format prints n in normalised form: one space around binary operators,
// ", " between arguments, shortest round-tripping numbers, and exactly the
// parentheses needed to re-parse to the same tree (a preset inside a
// function's arguments is parenthesised: its references would run on into
// the next argument). vars names the variables.
func (n *node) format(sb *strings.Builder, vars []string) {
	if n.preset != "" {
		sb.WriteString(n.preset)
		return
	}
	switch n.op {
	case opConst:
		sb.WriteString(strconv.FormatFloat(n.val, 'g', -1, 64))
	case opVar:
		sb.WriteString(vars[n.idx])
	case opAdd, opSub, opMul, opDiv:
		a, b := n.args[0], n.args[1]
		paren(sb, a, vars, a.prec() < n.prec())
		sb.WriteString(" " + n.op.String() + " ")
		paren(sb, b, vars, b.prec() <= n.prec())
	case opNeg:
		sb.WriteString("-")
		paren(sb, n.args[0], vars, n.args[0].prec() < n.prec())
	default:
		sb.WriteString(n.op.String())
		sb.WriteString("(")
		for i, a := range n.args {
			if i > 0 {
				sb.WriteString(", ")
			}
			paren(sb, a, vars, a.preset != "")
		}
		sb.WriteString(")")
	}
}

func paren(sb *strings.Builder, n *node, vars []string, need bool) {
	if need {
		sb.WriteString("(")
	}
	n.format(sb, vars)
	if need {
		sb.WriteString(")")
	}
}

// text returns n printed in normalised form over the variables vars.
func (n *node) text(vars []string) string {
	var sb strings.Builder
	n.format(&sb, vars)
	return sb.String()
}
