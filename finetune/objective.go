package finetune

import (
	"fmt"
	"strings"

	"github.com/paretonav/paretonav/png/criterion"
)

// objective evaluates the criterion over all points: the Multi criterion
// when set, else the sum of Criterion over the points.
type objective struct {
	c criterion.Criterion
	m criterion.Multi
}

// eval returns F and writes ∂F/∂ℓ_k into coef[k] and point k's own
// Criterion value into perF[k].
func (o objective) eval(L, coef [][]float64, perF []float64) (float64, error) {
	if o.m != nil {
		F, err := o.m.EvalMulti(L, coef)
		if err != nil {
			return F, err
		}
		for k := range L {
			perF[k] = 0
			if o.c != nil {
				if perF[k], err = o.c.Eval(L[k], nil); err != nil {
					return F, fmt.Errorf("model %d: %w", k, err)
				}
			}
		}
		return F, nil
	}
	var F float64
	for k := range L {
		f, err := o.c.Eval(L[k], coef[k])
		if err != nil {
			return F, fmt.Errorf("model %d: %w", k, err)
		}
		perF[k] = f
		F += f
	}
	return F, nil
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
