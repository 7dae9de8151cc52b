package finetune

import (
	"fmt"
	"math"
	"strings"

	"github.com/paretonav/paretonav/png/criterion"
)

// objective evaluates the criterion over all points: the Multi criterion
// (plus PerModel for every point) when set, else the sum of Criterion over
// the points. Every point's values form one vector x: the m task losses,
// then the problem's terms, then drift when a criterion uses it (layout);
// cIdx and pmIdx place each criterion's own variables in it.
type objective struct {
	c     criterion.Criterion
	m     criterion.Multi
	pm    criterion.Criterion
	cIdx  []int
	pmIdx []int
	tasks int    // m
	scale string // Settings.MultiScale
	trade bool   // Settings.MultiTrade
}

// eval returns F at the points' values X (one row per point) and writes
// ∂F/∂X_k into G[k] and point k's own Criterion value into perF[k]. Multi's
// gradients ∂F/∂L_k keep only their trades when o.trade is set
// (Settings.MultiTrade) and are then scaled as o.scale says
// (Settings.MultiScale), before PerModel's are added.
func (o objective) eval(X, G [][]float64, perF []float64) (float64, error) {
	for _, g := range G {
		clear(g)
	}
	if o.m == nil {
		var F float64
		for k, x := range X {
			f, err := evalAt(o.c, o.cIdx, x, G[k])
			if err != nil {
				return F, fmt.Errorf("model %d: %w", k, err)
			}
			perF[k] = f
			F += f
		}
		return F, nil
	}
	L, gL := make([][]float64, len(X)), make([][]float64, len(X))
	for k := range X {
		L[k], gL[k] = X[k][:o.tasks], G[k][:o.tasks]
	}
	F, err := o.m.EvalMulti(L, gL)
	if err != nil {
		return F, err
	}
	if o.trade {
		tradeOnly(gL)
	}
	scaleMulti(gL, o.scale)
	for k, x := range X {
		if o.pm != nil {
			f, err := evalAt(o.pm, o.pmIdx, x, G[k])
			if err != nil {
				return F, fmt.Errorf("model %d: %w", k, err)
			}
			F += f
		}
		perF[k] = 0
		if o.c != nil {
			if perF[k], err = evalAt(o.c, o.cIdx, x, nil); err != nil {
				return F, fmt.Errorf("model %d: %w", k, err)
			}
		}
	}
	return F, nil
}

// tradeOnly removes from every point's gradient g = ∂F/∂L_k its mean over
// the tasks, leaving g − (1ᵀg/m)·1: a zero-sum vector, which (unless it is
// zero) lowers some losses and raises others. See Settings.MultiTrade.
func tradeOnly(gL [][]float64) {
	for _, g := range gL {
		var mean float64
		for _, x := range g {
			mean += x
		}
		mean /= float64(len(g))
		for i := range g {
			g[i] -= mean
		}
	}
}

// scaleMulti scales the points' gradients gL as Settings.MultiScale says:
// each to unit length (MultiPerModel), all by the largest length
// (MultiShared), or not at all (MultiRaw). Zero gradients stay zero.
func scaleMulti(gL [][]float64, scale string) {
	switch scale {
	case MultiRaw:
	case MultiShared:
		var top float64
		for _, g := range gL {
			top = math.Max(top, norm(g))
		}
		if top == 0 || math.IsInf(top, 0) || math.IsNaN(top) {
			return
		}
		for _, g := range gL {
			for i := range g {
				g[i] /= top
			}
		}
	default: // MultiPerModel
		for _, g := range gL {
			normalize(g)
		}
	}
}

// evalAt evaluates c at its variables x[idx[i]] and, when g is not nil,
// adds ∂c/∂x into g at the same places.
func evalAt(c criterion.Criterion, idx []int, x, g []float64) (float64, error) {
	cx := make([]float64, len(idx))
	for i, j := range idx {
		cx[i] = x[j]
	}
	var cg []float64
	if g != nil {
		cg = make([]float64, len(idx))
	}
	f, err := c.Eval(cx, cg)
	if err != nil {
		return f, err
	}
	for i, j := range idx {
		if g != nil {
			g[j] += cg[i]
		}
	}
	return f, nil
}

// sumCriterion is the default criterion: F = Σ ℓ_i.
type sumCriterion struct{ tasks []string }

func (s sumCriterion) Tasks() []string { return s.tasks }
func (s sumCriterion) String() string  { return strings.Join(s.tasks, "+") }
func (s sumCriterion) Eval(losses, grad []float64) (float64, error) {
	var F float64
	for i, l := range losses {
		F += l
		if grad != nil {
			grad[i] = 1
		}
	}
	return F, nil
}

// checkTasks returns an error when a criterion's tasks differ from the
// problem's.
func checkTasks(what string, got, want []string) error {
	if len(got) != len(want) {
		return fmt.Errorf("finetune: %s has tasks %v, the problem has %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("finetune: %s has tasks %v, the problem has %v (same names in the same order expected)", what, got, want)
		}
	}
	return nil
}
