package criterion

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokIdent
	tokOp     // one of + - * / ( ) ,
	tokPreset // NAME:REFS, a preset used as an operand
)

// token is one lexical token; col is its 1-based column.
type token struct {
	kind tokKind
	text string
	num  float64
	col  int
	args string // tokPreset: the references as written
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokNum:
		return "number " + t.text
	case tokIdent:
		return "name " + strconv.Quote(t.text)
	case tokPreset:
		return "preset " + t.text
	}
	return "'" + t.text + "'"
}

func isLetter(r rune) bool { return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }
func isDigit(r rune) bool  { return r >= '0' && r <= '9' }

// isIdent reports whether s is a valid name: a letter or '_' followed by
// letters, digits and '_'.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !isLetter(r) && !(i > 0 && isDigit(r)) {
			return false
		}
	}
	return true
}

// lex splits s into tokens. It rejects '^' and '**' with a message pointing
// to pow, and any character outside the grammar.
func lex(s string) ([]token, error) {
	var toks []token
	col := 1
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			i += w
			col++
		case isLetter(r):
			j := i
			for j < len(s) && (isLetter(rune(s[j])) || isDigit(rune(s[j]))) {
				j++
			}
			if k := skipSpace(s, j); k < len(s) && s[k] == ':' {
				end := scanRefs(s, k+1)
				toks = append(toks, token{kind: tokPreset, text: s[i:j], args: s[k+1 : end], col: col})
				col += utf8.RuneCountInString(s[i:end])
				i = end
				continue
			}
			toks = append(toks, token{kind: tokIdent, text: s[i:j], col: col})
			col += j - i
			i = j
		case isDigit(r) || r == '.':
			j, err := scanNumber(s, i, col)
			if err != nil {
				return nil, err
			}
			text := s[i:j]
			v, perr := strconv.ParseFloat(text, 64)
			if perr != nil {
				return nil, &SyntaxError{Col: col, Msg: fmt.Sprintf("number %s is out of range", text)}
			}
			toks = append(toks, token{kind: tokNum, text: text, num: v, col: col})
			col += j - i
			i = j
		case r == '*' && i+1 < len(s) && s[i+1] == '*':
			return nil, &SyntaxError{Col: col, Msg: "'**' is not an operator; write powers as pow(a, b)"}
		case r == '^':
			return nil, &SyntaxError{Col: col, Msg: "'^' is not an operator; write powers as pow(a, b)"}
		case r == '+' || r == '-' || r == '*' || r == '/' || r == '(' || r == ')' || r == ',':
			toks = append(toks, token{kind: tokOp, text: string(r), col: col})
			i++
			col++
		default:
			if r == utf8.RuneError && w == 1 {
				return nil, &SyntaxError{Col: col, Msg: "invalid UTF-8 byte"}
			}
			return nil, &SyntaxError{Col: col, Msg: fmt.Sprintf("unexpected character %q; expected a number, a task name, an operator (+ - * /), a parenthesis or a comma", r)}
		}
	}
	toks = append(toks, token{kind: tokEOF, col: col})
	return toks, nil
}

// skipSpace returns the index of the first non-blank byte of s at or
// after i.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// scanRefs returns the end of a preset's reference list starting at s[i]
// (just after the ':'): it runs to the next + * / ( or ), or to a '-' that
// follows a reference (a '-' right after ':' or ',' is a sign, one after a
// mantissa's 'e' an exponent's), or to the end. What it holds is checked
// by parseRefs, which names a malformed reference as written.
func scanRefs(s string, i int) int {
	afterSep := true // at the start of a reference
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+' || c == '-':
			exp := i > 1 && (s[i-1] == 'e' || s[i-1] == 'E') && (isDigit(rune(s[i-2])) || s[i-2] == '.')
			if !exp && (c == '+' || !afterSep) {
				return i
			}
			afterSep = false
		case c == '*' || c == '/' || c == '(' || c == ')':
			return i
		case c == ',':
			afterSep = true
		case c != ' ' && c != '\t' && c != '\n' && c != '\r':
			afterSep = false
		}
	}
	return i
}

// scanNumber returns the end of the number starting at s[i]: digits with an
// optional fraction (".5" and "5." are accepted) and an optional exponent.
func scanNumber(s string, i, col int) (int, error) {
	start := i
	digits := 0
	for i < len(s) && isDigit(rune(s[i])) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(rune(s[i])) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, &SyntaxError{Col: col, Msg: "'.' must be part of a number such as .5"}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && isDigit(rune(s[k])) {
			k++
		}
		if k == j {
			return 0, &SyntaxError{Col: col, Msg: fmt.Sprintf("malformed number %q: exponent needs digits", s[start:k])}
		}
		i = k
	}
	if i < len(s) && (isLetter(rune(s[i])) || isDigit(rune(s[i])) || s[i] == '.') {
		return 0, &SyntaxError{Col: col + i - start, Msg: fmt.Sprintf("unexpected %q after number %s", s[i], s[start:i])}
	}
	return i, nil
}
