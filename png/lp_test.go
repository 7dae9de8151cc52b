package png

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// lpValueTol is the agreement asked of SolveLP and the brute-force vertex
// enumeration on the optimal value, relative to max(1, |value|).
const lpValueTol = 1e-9

// bruteLP solves p by enumerating every vertex of its feasible set: every
// choice of n linearly independent constraints (rows of A and bounds
// x_j ≥ 0) made tight, solved by Gaussian elimination, kept when it
// satisfies all constraints. It returns the best value and whether any
// vertex is feasible. The feasible set lies in x ≥ 0, so it has a vertex
// whenever it is non-empty; p must be bounded for the value to be the
// optimum.
func bruteLP(p LP) (best float64, feasible bool) {
	n, k := len(p.C), len(p.A)
	type con struct {
		a []float64
		b float64
	}
	var all []con
	for i := range p.A {
		all = append(all, con{p.A[i], p.B[i]})
	}
	for j := 0; j < n; j++ {
		e := make([]float64, n)
		e[j] = 1
		all = append(all, con{e, 0})
	}
	best = math.Inf(-1)
	var rec func(start int, chosen []int)
	rec = func(start int, chosen []int) {
		if len(chosen) == n {
			M := make([][]float64, n)
			for r, c := range chosen {
				M[r] = append(append([]float64(nil), all[c].a...), all[c].b)
			}
			x, ok := gaussSolve(M)
			if !ok {
				return
			}
			for _, v := range x {
				if v < -1e-9 {
					return
				}
			}
			for i := 0; i < k; i++ {
				s := dotF(p.A[i], x) - p.B[i]
				tol := 1e-9 * (1 + math.Abs(p.B[i]))
				if (p.Rel[i] == LE && s > tol) || (p.Rel[i] == GE && s < -tol) || (p.Rel[i] == EQ && math.Abs(s) > tol) {
					return
				}
			}
			feasible = true
			best = math.Max(best, dotF(p.C, x))
			return
		}
		for c := start; c < len(all); c++ {
			rec(c+1, append(chosen, c))
		}
	}
	rec(0, nil)
	return best, feasible
}

func dotF(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// gaussSolve solves the n×(n+1) augmented system M with partial pivoting;
// ok is false when it is singular.
func gaussSolve(M [][]float64) ([]float64, bool) {
	n := len(M)
	for c := 0; c < n; c++ {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(M[r][c]) > math.Abs(M[p][c]) {
				p = r
			}
		}
		if math.Abs(M[p][c]) < 1e-10 {
			return nil, false
		}
		M[c], M[p] = M[p], M[c]
		for r := 0; r < n; r++ {
			if r == c {
				continue
			}
			f := M[r][c] / M[c][c]
			for j := c; j <= n; j++ {
				M[r][j] -= f * M[c][j]
			}
		}
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = M[i][n] / M[i][i]
	}
	return x, true
}

// randomLP draws an LP with n variables, k random rows and a bounding row
// Σx ≤ U. With integer coefficients in [−2, 2] (ints) many vertices are
// degenerate (several constraints tight at once, ties in the ratio test).
func randomLP(rng *rand.Rand, n, k int, ints bool) LP {
	draw := func() float64 {
		if ints {
			return float64(rng.IntN(5) - 2)
		}
		return rng.NormFloat64()
	}
	p := LP{C: make([]float64, n)}
	for j := range p.C {
		p.C[j] = draw()
	}
	for i := 0; i < k; i++ {
		row := make([]float64, n)
		for j := range row {
			row[j] = draw()
		}
		rel := Relation(rng.IntN(3))
		if rel == EQ && rng.IntN(2) == 0 {
			rel = GE // fewer equalities: more feasible programs
		}
		p.A = append(p.A, row)
		p.Rel = append(p.Rel, rel)
		p.B = append(p.B, draw())
	}
	ones := make([]float64, n)
	for j := range ones {
		ones[j] = 1
	}
	p.A = append(p.A, ones)
	p.Rel = append(p.Rel, LE)
	p.B = append(p.B, 3+float64(rng.IntN(3)))
	return p
}

func TestSolveLPAgainstVertexEnumeration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ints   bool
		trials int
	}{{"gaussian", false, 400}, {"degenerate-integers", true, 600}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, 3))
			var solved, infeasible int
			for trial := 0; trial < tc.trials; trial++ {
				n, k := 1+rng.IntN(4), rng.IntN(5)
				p := randomLP(rng, n, k, tc.ints)
				want, feasible := bruteLP(p)
				x, got, err := SolveLP(p)
				if !feasible {
					infeasible++
					if !errors.Is(err, ErrInfeasible) {
						t.Fatalf("trial %d: %+v: vertex enumeration finds no feasible point, SolveLP gives x = %v, err %v", trial, p, x, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("trial %d: %+v: %v (enumeration: optimum %g)", trial, p, err, want)
				}
				solved++
				if math.Abs(got-want) > lpValueTol*math.Max(1, math.Abs(want)) {
					t.Fatalf("trial %d: %+v: value %.12g, vertex enumeration %.12g", trial, p, got, want)
				}
				if math.Abs(dotF(p.C, x)-got) > 1e-12*math.Max(1, math.Abs(got)) {
					t.Fatalf("trial %d: value %g is not cᵀx = %g", trial, got, dotF(p.C, x))
				}
				for i := range p.A {
					s := dotF(p.A[i], x) - p.B[i]
					tol := 1e-9 * (1 + math.Abs(p.B[i]))
					if (p.Rel[i] == LE && s > tol) || (p.Rel[i] == GE && s < -tol) || (p.Rel[i] == EQ && math.Abs(s) > tol) {
						t.Fatalf("trial %d: x = %v violates row %d by %g", trial, x, i, s)
					}
				}
				for j, v := range x {
					if v < 0 {
						t.Fatalf("trial %d: x[%d] = %g < 0", trial, j, v)
					}
				}
			}
			// The draw must exercise both outcomes.
			if solved < tc.trials/4 || infeasible == 0 {
				t.Errorf("%d solved and %d infeasible programs of %d: the draw does not cover both", solved, infeasible, tc.trials)
			}
		})
	}
}

func TestSolveLPCases(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     LP
		value float64
		x     []float64
		err   error
	}{{
		// Beale's example: the textbook rule (most positive reduced cost,
		// lowest row on ties) cycles at the degenerate origin forever.
		name: "beale-cycling",
		p: LP{C: []float64{0.75, -20, 0.5, -6},
			A:   [][]float64{{0.25, -8, -1, 9}, {0.5, -12, -0.5, 3}, {0, 0, 1, 0}},
			Rel: []Relation{LE, LE, LE}, B: []float64{0, 0, 1}},
		value: 1.25, x: []float64{1, 0, 1, 0},
	}, {
		name:  "equality-and-redundant-row",
		p:     LP{C: []float64{1, 2}, A: [][]float64{{1, 1}, {2, 2}}, Rel: []Relation{EQ, EQ}, B: []float64{1, 2}},
		value: 2, x: []float64{0, 1},
	}, {
		name:  "negative-rhs",
		p:     LP{C: []float64{-1, -1}, A: [][]float64{{-1, -2}}, Rel: []Relation{LE}, B: []float64{-4}},
		value: -2, x: []float64{0, 2},
	}, {
		name: "unbounded",
		p:    LP{C: []float64{1, 0}, A: [][]float64{{0, 1}}, Rel: []Relation{LE}, B: []float64{1}},
		err:  ErrLPUnbounded,
	}, {
		name: "infeasible",
		p:    LP{C: []float64{1}, A: [][]float64{{1}, {1}}, Rel: []Relation{GE, LE}, B: []float64{2, 1}},
		err:  ErrInfeasible,
	}, {
		name:  "tiny-scale",
		p:     LP{C: []float64{1e-9, 3e-9}, A: [][]float64{{1e-12, 1e-12}, {1e-12, -1e-12}}, Rel: []Relation{EQ, GE}, B: []float64{1e-12, 0}},
		value: 2e-9, x: []float64{0.5, 0.5},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			x, v, err := SolveLP(tc.p)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(v-tc.value) > 1e-12*math.Max(1, math.Abs(tc.value)) {
				t.Errorf("value %.15g, want %.15g", v, tc.value)
			}
			for j := range tc.x {
				if math.Abs(x[j]-tc.x[j]) > 1e-12 {
					t.Errorf("x = %v, want %v", x, tc.x)
					break
				}
			}
		})
	}
}

func TestSolveLPBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    LP
		want string
	}{
		{"rows", LP{C: []float64{1}, A: [][]float64{{1}}, Rel: []Relation{LE}}, "right-hand sides"},
		{"width", LP{C: []float64{1}, A: [][]float64{{1, 2}}, Rel: []Relation{LE}, B: []float64{1}}, "row 0 has 2 coefficients"},
		{"nan", LP{C: []float64{math.NaN()}}, "c[0]"},
		{"inf", LP{C: []float64{1}, A: [][]float64{{math.Inf(1)}}, Rel: []Relation{LE}, B: []float64{1}}, "A[0][0]"},
		{"relation", LP{C: []float64{1}, A: [][]float64{{1}}, Rel: []Relation{7}, B: []float64{1}}, "relation 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := SolveLP(tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
