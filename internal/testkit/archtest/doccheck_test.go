package archtest

import (
	"slices"
	"strings"
	"testing"
)

// TestDocProblemsFindsGaps checks the doc checker on testdata/undocumented,
// a package with one of each kind of gap and of each accepted form.
func TestDocProblemsFindsGaps(t *testing.T) {
	problems, err := docProblems("testdata/undocumented", []string{"x.go"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.msg)
	}
	want := []string{"package undocumented", "Good.Bare", "type Bare", "func Misnamed", "func Undocumented", "const Lost", "var Naked"}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) }) {
			t.Errorf("no problem reported for %s; got %q", w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d: %q", len(got), len(want), got)
	}
}
