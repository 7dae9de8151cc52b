package png

import (
	"errors"
	"fmt"
	"math"
)

// Relation is the sense of one row of an LP: Aᵢx ≤ bᵢ, = bᵢ or ≥ bᵢ.
type Relation int8

// The row senses of an LP.
const (
	LE Relation = iota // Aᵢx ≤ bᵢ
	EQ                 // Aᵢx = bᵢ
	GE                 // Aᵢx ≥ bᵢ
)

// LP is the linear program
//
//	maximise cᵀx  subject to  Aᵢx (Rel[i]) B[i] for every row i,  x ≥ 0.
//
// C has n values; A has one row of n values per constraint, with its
// relation in Rel and its right-hand side in B.
type LP struct {
	C   []float64
	A   [][]float64
	Rel []Relation
	B   []float64
}

// ErrInfeasible is returned by SolveLP when no x satisfies the constraints.
var ErrInfeasible = errors.New("png: LP infeasible")

// ErrLPUnbounded is returned by SolveLP when cᵀx is unbounded above on the
// feasible set.
var ErrLPUnbounded = errors.New("png: LP unbounded")

// lpTol is the tolerance of SolveLP on the row-scaled tableau (every row
// and the objective scaled to a largest entry of 1): reduced costs and
// pivots smaller than lpTol count as zero, and a phase-1 optimum above
// lpTol means infeasible.
const lpTol = 1e-11

// SolveLP solves p exactly (up to floating-point rounding) with the
// two-phase dense simplex method and Bland's rule, which never cycles on
// degenerate vertices: it returns an optimal vertex x and the value cᵀx.
// When several vertices are optimal it returns the one Bland's rule
// reaches first, a deterministic function of p. Phase 1 minimises the sum
// of one artificial variable per ≥ and = row (rows are first negated to
// make b ≥ 0); an artificial left in the basis at zero is pivoted out or
// its row dropped as redundant.
//
// Mismatched shapes or non-finite entries are an error, and so are an
// infeasible (ErrInfeasible) and an unbounded (ErrLPUnbounded) program.
func SolveLP(p LP) (x []float64, value float64, err error) {
	n, k := len(p.C), len(p.A)
	if len(p.Rel) != k || len(p.B) != k {
		return nil, 0, fmt.Errorf("png: LP has %d rows in A, %d relations and %d right-hand sides; want equal counts", k, len(p.Rel), len(p.B))
	}
	for j, c := range p.C {
		if !isFinite(c) {
			return nil, 0, fmt.Errorf("png: LP objective c[%d] = %v, want a finite number", j, c)
		}
	}
	t := &tableau{n: n}
	for i, row := range p.A {
		if len(row) != n {
			return nil, 0, fmt.Errorf("png: LP row %d has %d coefficients, want %d", i, len(row), n)
		}
		if p.Rel[i] < LE || p.Rel[i] > GE {
			return nil, 0, fmt.Errorf("png: LP row %d has relation %d, want LE, EQ or GE", i, p.Rel[i])
		}
		for j, a := range row {
			if !isFinite(a) {
				return nil, 0, fmt.Errorf("png: LP A[%d][%d] = %v, want a finite number", i, j, a)
			}
		}
		if !isFinite(p.B[i]) {
			return nil, 0, fmt.Errorf("png: LP b[%d] = %v, want a finite number", i, p.B[i])
		}
	}
	t.build(p)
	if t.nArt > 0 {
		cost := make([]float64, t.cols)
		for j := t.artStart; j < t.cols; j++ {
			cost[j] = -1
		}
		if err := t.optimise(cost, t.cols); err != nil {
			return nil, 0, err
		}
		var infeas float64
		for i, b := range t.basis {
			if b >= t.artStart {
				infeas += t.rhs(i)
			}
		}
		if infeas > lpTol {
			return nil, 0, fmt.Errorf("%w: the constraints leave a residual of %.3g (scaled)", ErrInfeasible, infeas)
		}
		t.dropArtificials()
	}
	cost := make([]float64, t.cols)
	scale := maxAbs(p.C)
	if scale > 0 {
		for j, c := range p.C {
			cost[j] = c / scale
		}
	}
	if err := t.optimise(cost, t.artStart); err != nil {
		return nil, 0, err
	}
	x = make([]float64, n)
	for i, b := range t.basis {
		if b < n {
			x[b] = math.Max(t.rhs(i), 0)
		}
	}
	for j, c := range p.C {
		value += c * x[j]
	}
	return x, value, nil
}

// tableau is the dense simplex tableau: rows of [coefficients | rhs] over
// the columns x (n), slacks and surpluses, then artificials.
type tableau struct {
	n, cols  int
	artStart int
	nArt     int
	rows     [][]float64
	basis    []int
}

func (t *tableau) rhs(i int) float64 { return t.rows[i][t.cols] }

// build writes p in equality form with b ≥ 0, each row scaled to a largest
// absolute entry of 1, and an initial basis of slacks and artificials.
func (t *tableau) build(p LP) {
	k := len(p.A)
	rel := make([]Relation, k)
	var nSlack int
	for i := range p.A {
		rel[i] = p.Rel[i]
		if p.B[i] < 0 {
			rel[i] = GE - rel[i] // LE ↔ GE, EQ stays
		}
		if rel[i] != EQ {
			nSlack++
		}
		if rel[i] != LE {
			t.nArt++
		}
	}
	t.artStart = t.n + nSlack
	t.cols = t.artStart + t.nArt
	t.basis = make([]int, k)
	slack, art := t.n, t.artStart
	for i, a := range p.A {
		row := make([]float64, t.cols+1)
		sign := 1.0
		if p.B[i] < 0 {
			sign = -1
		}
		// Scale the constraint to a largest entry of 1 (slacks and
		// artificials keep coefficient ±1).
		if s := math.Max(maxAbs(a), math.Abs(p.B[i])); s > 0 {
			sign /= s
		}
		for j, v := range a {
			row[j] = sign * v
		}
		row[t.cols] = sign * p.B[i]
		switch rel[i] {
		case LE:
			row[slack] = 1
			t.basis[i] = slack
			slack++
		case GE:
			row[slack] = -1
			slack++
			fallthrough
		case EQ:
			row[art] = 1
			t.basis[i] = art
			art++
		}
		t.rows = append(t.rows, row)
	}
}

// optimise maximises costᵀx from the current (feasible) basis over the
// columns below limit with Bland's rule: the entering column is the
// lowest-indexed one with a positive reduced cost, the leaving row the one
// with the smallest ratio, ties broken by the lowest basic column.
func (t *tableau) optimise(cost []float64, limit int) error {
	// Bland's rule terminates; the cap only guards against a bug.
	maxIter := 1000 * (t.cols + len(t.rows) + 1)
	for iter := 0; iter < maxIter; iter++ {
		enter := -1
		for j := 0; j < limit; j++ {
			if t.isBasic(j) {
				continue
			}
			rc := cost[j]
			for i, b := range t.basis {
				rc -= cost[b] * t.rows[i][j]
			}
			if rc > lpTol {
				enter = j
				break
			}
		}
		if enter < 0 {
			return nil
		}
		leave := -1
		var best float64
		for i, row := range t.rows {
			a := row[enter]
			if a <= lpTol {
				continue
			}
			r := row[t.cols] / a
			if leave < 0 || r < best-lpTol || (r <= best+lpTol && t.basis[i] < t.basis[leave]) {
				leave, best = i, r
			}
		}
		if leave < 0 {
			return fmt.Errorf("%w: column %d increases the objective without limit", ErrLPUnbounded, enter)
		}
		t.pivot(leave, enter)
	}
	return fmt.Errorf("png: LP simplex did not terminate in %d pivots (a bug)", maxIter)
}

func (t *tableau) isBasic(j int) bool {
	for _, b := range t.basis {
		if b == j {
			return true
		}
	}
	return false
}

// pivot makes column enter basic in row leave.
func (t *tableau) pivot(leave, enter int) {
	pr := t.rows[leave]
	inv := 1 / pr[enter]
	for j := range pr {
		pr[j] *= inv
	}
	pr[enter] = 1
	for i, row := range t.rows {
		if i == leave {
			continue
		}
		f := row[enter]
		if f == 0 {
			continue
		}
		for j := range row {
			row[j] -= f * pr[j]
		}
		row[enter] = 0
	}
	t.basis[leave] = enter
}

// dropArtificials pivots every artificial still basic (at level zero after
// a feasible phase 1) out of the basis, or drops its row when no
// non-artificial column has a non-zero entry there (the row is a linear
// combination of the others).
func (t *tableau) dropArtificials() {
	for i := 0; i < len(t.rows); {
		if t.basis[i] < t.artStart {
			i++
			continue
		}
		enter := -1
		for j := 0; j < t.artStart; j++ {
			if !t.isBasic(j) && math.Abs(t.rows[i][j]) > lpTol {
				enter = j
				break
			}
		}
		if enter >= 0 {
			t.pivot(i, enter)
			i++
			continue
		}
		t.rows = append(t.rows[:i], t.rows[i+1:]...)
		t.basis = append(t.basis[:i], t.basis[i+1:]...)
	}
}
