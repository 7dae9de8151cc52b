package backend

import (
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/png"
)

// TestTermsMatchTasks: a loss given as a term (Options.Terms) has the value
// and the exact gradient it has as a task, Tasks and Evaluate leave it out,
// and EvaluateTerms reports it beside the unchanged task losses.
func TestTermsMatchTasks(t *testing.T) {
	m := twoHead()
	batch := twoHeadBatch(6)
	asTasks, err := Open(m, mustTasks(t, "a:nll:logp:ya", "b:mse:reg:yb"), Options{Float64: true})
	if err != nil {
		t.Fatal(err)
	}
	withTerm, err := Open(m, mustTasks(t, "a:nll:logp:ya"), Options{Float64: true, Terms: mustTasks(t, "b:mse:reg:yb")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(withTerm.Tasks(), []string{"a"}) || !slices.Equal(withTerm.Terms(), []string{"b"}) {
		t.Fatalf("Tasks %v Terms %v, want [a] [b]", withTerm.Tasks(), withTerm.Terms())
	}
	n := asTasks.NumParams()
	want, wantJ := make([]float64, 2), png.NewJacobian(2, n)
	if err := asTasks.Evaluate(batch, want, &wantJ); err != nil {
		t.Fatal(err)
	}
	losses, terms := make([]float64, 1), make([]float64, 1)
	jac, tjac := png.NewJacobian(1, n), png.NewJacobian(1, n)
	if err := withTerm.EvaluateTerms(batch, losses, terms, &jac, &tjac); err != nil {
		t.Fatal(err)
	}
	if losses[0] != want[0] || terms[0] != want[1] {
		t.Errorf("loss %v term %v, want %v %v", losses[0], terms[0], want[0], want[1])
	}
	if !slices.Equal(jac.Row(0), wantJ.Row(0)) || !slices.Equal(tjac.Row(0), wantJ.Row(1)) {
		t.Error("task or term gradient differs from the two-task model's rows")
	}
	if slices.Equal(tjac.Row(0), make([]float32, n)) {
		t.Error("term gradient is all zero")
	}
	// Evaluate: tasks only.
	l1, j1 := make([]float64, 1), png.NewJacobian(1, n)
	if err := withTerm.Evaluate(batch, l1, &j1); err != nil {
		t.Fatal(err)
	}
	if l1[0] != want[0] || !slices.Equal(j1.Row(0), wantJ.Row(0)) {
		t.Error("Evaluate with a term differs from the task-only values")
	}
	// Task gradients with term values only (no term backward pass).
	clear(jac.Data)
	if err := withTerm.EvaluateTerms(batch, losses, terms, &jac, nil); err != nil || terms[0] != want[1] || !slices.Equal(jac.Row(0), wantJ.Row(0)) {
		t.Errorf("EvaluateTerms with the task Jacobian only: term %v, err %v; want %v and the task gradient", terms[0], err, want[1])
	}
	// Values without gradients.
	if err := withTerm.EvaluateTerms(batch, losses, terms, nil, nil); err != nil || terms[0] != want[1] {
		t.Errorf("EvaluateTerms without Jacobians: term %v, err %v; want %v", terms[0], err, want[1])
	}
}

func TestTermsErrors(t *testing.T) {
	m := twoHead()
	batch := twoHeadBatch(4)
	for _, tc := range []struct {
		tasks, terms []string
		msg          string
	}{
		{[]string{"a:nll:logp:ya"}, []string{"a:mse:reg:yb"}, `term "a": name used twice`},
		{[]string{"a:nll:logp:ya"}, []string{"b:mse:nothere:yb"}, `term "b": the model has no output "nothere"`},
	} {
		if _, err := Open(m, mustTasks(t, tc.tasks...), Options{Terms: mustTasks(t, tc.terms...)}); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Open(%v, terms %v): %v, want an error containing %q", tc.tasks, tc.terms, err, tc.msg)
		}
	}
	md, err := Open(m, mustTasks(t, "a:nll:logp:ya"), Options{Terms: mustTasks(t, "b:mse:reg:yz")})
	if err != nil {
		t.Fatal(err)
	}
	n := md.NumParams()
	jac := png.NewJacobian(1, n)
	for _, tc := range []struct {
		name string
		call func() error
		msg  string
	}{
		{"missing target", func() error { return md.EvaluateTerms(batch, make([]float64, 1), make([]float64, 1), nil, nil) }, `term "b": no target array "yz"`},
		{"short terms", func() error { return md.EvaluateTerms(batch, make([]float64, 1), nil, nil, nil) }, "terms has length 0, expected 1"},
		{"term Jacobian alone", func() error { return md.EvaluateTerms(batch, make([]float64, 1), make([]float64, 1), nil, &jac) }, "needs the task Jacobian"},
		{"wide term Jacobian", func() error {
			w := png.NewJacobian(2, n)
			return md.EvaluateTerms(batch, make([]float64, 1), make([]float64, 1), &jac, &w)
		}, "term Jacobian is 2×"},
	} {
		if err := tc.call(); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.msg)
		}
	}
}
