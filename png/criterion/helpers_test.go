package criterion

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/floats/scalar"
)

// Tolerances for comparing exact derivatives with central differences.
const (
	fdStep   = 1e-6
	fdAbsTol = 1e-6
	fdRelTol = 1e-5
)

// checkGrad compares c's exact gradient at x with central differences.
func checkGrad(t *testing.T, c Criterion, x []float64) {
	t.Helper()
	got := make([]float64, len(x))
	if _, err := c.Eval(x, got); err != nil {
		t.Fatalf("%s at %v: %v", c, x, err)
	}
	f := func(y []float64) float64 {
		v, err := c.Eval(y, nil)
		if err != nil {
			return math.NaN()
		}
		return v
	}
	want := fd.Gradient(nil, f, x, &fd.Settings{Formula: fd.Central, Step: fdStep})
	for i := range got {
		if !scalar.EqualWithinAbsOrRel(got[i], want[i], fdAbsTol, fdRelTol) {
			t.Errorf("%s at %v: ∂F/∂%s = %.10g, central difference %.10g", c, x, VarsOf(c)[i], got[i], want[i])
		}
	}
}
