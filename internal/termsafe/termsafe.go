// Package termsafe makes text read from files safe to print on a terminal
// or in a log line. Names in ONNX models, NPZ archives, configuration and
// jobs files are arbitrary bytes; printed raw, an escape sequence in one
// (ESC, BEL, a C1 control) can recolour the terminal, retitle its window
// or hide what follows. Every such character is replaced by the escape Go's
// %q would write for it (\x1b, \a, \u0085, \xff for a byte that is not
// UTF-8), so ordinary names print unchanged and the others stay readable.
//
// It is a leaf: importer, backend, job, batch and cli all use it.
package termsafe

import (
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// unsafeRune reports whether r is a control character: C0 (U+0000–U+001F),
// DEL or C1 (U+0080–U+009F).
func unsafeRune(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

// clean reports whether s needs no escape, keeping the characters keep
// allows.
func clean(s string, keep func(rune) bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r) && !keep(r) {
			return false
		}
		i += size - 1
	}
	return true
}

func escape(s string, keep func(rune) bool) string {
	if clean(s, keep) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&15, 16))
		case unsafeRune(r) && !keep(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func keepNone(rune) bool { return false }

func keepLines(r rune) bool { return r == '\n' || r == '\t' }

// Name returns s with every control character and every byte that is not
// UTF-8 escaped, newlines and tabs included: a name is one line.
func Name(s string) string { return escape(s, keepNone) }

// Names returns Name of each of names, in a new slice.
func Names(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = Name(n)
	}
	return out
}

// Text returns s escaped as Name does, but keeping newlines and tabs: for a
// message of several lines (an error listing problems, a summary) that may
// quote names.
func Text(s string) string { return escape(s, keepLines) }

// Writer escapes, as Text does, everything written through it to w. Each
// Write is escaped on its own, so a character split across two writes is
// escaped as the bytes it is made of; fmt's Fprint functions write once per
// call.
type Writer struct{ W io.Writer }

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{W: w} }

// Write writes Text(p) to w and reports len(p) on success.
func (w *Writer) Write(p []byte) (int, error) {
	s := string(p)
	if t := Text(s); t != s {
		if _, err := io.WriteString(w.W, t); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return w.W.Write(p)
}
