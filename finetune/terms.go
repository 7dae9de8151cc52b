package finetune

import (
	"fmt"
	"slices"
	"strings"

	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// layout says where a point's values sit in its vector x: the m task
// losses, then the problem's t terms, then drift (‖θ − θ₀‖²) when a
// criterion reads it. The gradient of F over x has the same layout: the
// first m entries are png.Gradient.Coef, the rest weigh gradients outside
// the span of J (the terms' rows and 2(θ − θ₀)).
type layout struct {
	m, t  int
	terms []string
	drift int // index of drift in x; -1 when no criterion reads it
}

// size returns the length of x.
func (y layout) size() int {
	if y.drift >= 0 {
		return y.m + y.t + 1
	}
	return y.m + y.t
}

// newLayout builds the layout for problems ps and the criteria that read
// it (nil entries skipped), and returns, per criterion, where each of its
// variables (criterion.VarsOf) sits in x. Every point must have the same
// terms, and every variable of a criterion beyond the tasks must be one of
// them or drift.
func newLayout(ps []Problem, tasks []string, crits ...criterion.Criterion) (layout, [][]int, error) {
	terms := termsOf(ps[0])
	for k, p := range ps[1:] {
		if got := termsOf(p); !slices.Equal(got, terms) {
			return layout{}, nil, fmt.Errorf("finetune: model %d has terms %v, model 0 has %v", k+1, got, terms)
		}
	}
	y := layout{m: len(tasks), t: len(terms), terms: terms, drift: -1}
	for _, c := range crits {
		if c != nil && slices.Contains(criterion.VarsOf(c), criterion.Drift) {
			y.drift = y.m + y.t
		}
	}
	idx := make([][]int, len(crits))
	for ci, c := range crits {
		if c == nil {
			continue
		}
		vars := criterion.VarsOf(c)
		idx[ci] = make([]int, len(vars))
		for i, name := range vars {
			switch j := slices.Index(terms, name); {
			case i < y.m:
				idx[ci][i] = i
			case name == criterion.Drift:
				idx[ci][i] = y.drift
			case j >= 0:
				idx[ci][i] = y.m + j
			default:
				known := "the problem has no terms"
				if len(terms) > 0 {
					known = "the problem's terms are " + strings.Join(terms, ", ")
				}
				return layout{}, nil, fmt.Errorf("finetune: criterion %s reads %q, which is neither a task, a term nor %s (%s)", c, name, criterion.Drift, known)
			}
		}
	}
	return y, idx, nil
}

// termsOf returns p's term names (none unless p is a TermProblem).
func termsOf(p Problem) []string {
	if tp, ok := p.(TermProblem); ok {
		return tp.Terms()
	}
	return nil
}

// initTerms gives pt its value vector in layout y: losses and coef become
// views of x and g, and the term Jacobian, θ₀ (the current parameters,
// when drift is read) and the Extra buffer are allocated as needed.
func (pt *point) initTerms(y layout, n int) {
	pt.x, pt.g = make([]float64, y.size()), make([]float64, y.size())
	pt.losses, pt.coef = pt.x[:y.m], pt.g[:y.m]
	pt.terms = pt.x[y.m : y.m+y.t]
	if y.t > 0 {
		pt.tp = pt.p.(TermProblem)
		pt.tjac = png.NewJacobian(y.t, n)
	}
	if y.drift >= 0 {
		pt.theta0 = slices.Clone(pt.theta)
	}
	if y.t > 0 || y.drift >= 0 {
		pt.extra = make([]float32, n)
	}
}

// evaluate computes pt's losses and terms on b (and their gradients when
// withJac), then drift at the current parameters.
func (pt *point) evaluate(y layout, b Batch, withJac bool) error {
	var jac, tjac *png.Jacobian
	if withJac {
		jac, tjac = &pt.jac, &pt.tjac
	}
	var err error
	if pt.tp != nil {
		err = pt.tp.EvaluateTerms(b, pt.losses, pt.terms, jac, tjac)
	} else {
		err = pt.p.Evaluate(b, pt.losses, jac)
	}
	if err != nil {
		return err
	}
	if y.drift >= 0 {
		pt.x[y.drift] = png.Drift(pt.theta, pt.theta0)
	}
	return nil
}

// gradient returns ∇F for pt's direction: Coef = ∂F/∂ℓ, and Extra the
// terms' and drift's part when one of their coefficients is nonzero (nil
// otherwise, so that a criterion of the task losses alone stays in the
// span of J and costs no pass over n).
func (pt *point) gradient(y layout) png.Gradient {
	g := png.Gradient{Coef: pt.coef}
	if pt.extra == nil {
		return g
	}
	var cd float64
	if y.drift >= 0 {
		cd = pt.g[y.drift]
	}
	if png.OutsideSpan(pt.extra, pt.tjac, pt.g[y.m:y.m+y.t], cd, pt.theta, pt.theta0) {
		g.Extra = pt.extra
	}
	return g
}

// driftValue returns pt's drift, or 0 when no criterion reads it.
func (pt *point) driftValue(y layout) float64 {
	if y.drift < 0 {
		return 0
	}
	return pt.x[y.drift]
}
