package bench

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat"
)

// Summary is the mean and sample standard deviation (n − 1) of values.
type Summary struct {
	Mean, Std float64
	N         int
}

// Summarize returns the mean and sample standard deviation of x (Std is 0
// for one value, both NaN for none).
func Summarize(x []float64) Summary {
	switch len(x) {
	case 0:
		return Summary{Mean: math.NaN(), Std: math.NaN()}
	case 1:
		return Summary{Mean: x[0], N: 1}
	}
	m, s := stat.MeanStdDev(x, nil)
	return Summary{Mean: m, Std: s, N: len(x)}
}

// TTest is the outcome of a paired t-test.
type TTest struct {
	T  float64 // t statistic of the mean difference a − b
	DF float64 // degrees of freedom, n − 1
	P  float64 // two-sided p-value
	N  int
}

// PairedT tests whether the paired samples a and b (same length ≥ 2) have
// the same mean: with d = a − b, t = mean(d) / (sd(d)/√n) on n − 1 degrees
// of freedom, p = 2·P(T > |t|) under Student's t: I_{ν/(ν+t²)}(ν/2, 1/2),
// the regularized incomplete beta function (mathext.RegIncBeta, which
// gonum's distuv.StudentsT is built on; distuv itself needs
// golang.org/x/exp, which is not among this module's dependencies).
// When every difference is the same, sd(d) = 0: t is ±Inf and p 0 if that
// difference is non-zero, t 0 and p 1 if it is zero.
func PairedT(a, b []float64) (TTest, error) {
	if len(a) != len(b) {
		return TTest{}, fmt.Errorf("bench: paired t-test of %d and %d values: want equal lengths", len(a), len(b))
	}
	n := len(a)
	if n < 2 {
		return TTest{}, fmt.Errorf("bench: paired t-test of %d pairs: want at least 2", n)
	}
	d := make([]float64, n)
	for i := range a {
		d[i] = a[i] - b[i]
	}
	m, s := stat.MeanStdDev(d, nil)
	r := TTest{DF: float64(n - 1), N: n}
	switch {
	case math.IsNaN(m) || math.IsNaN(s):
		r.T, r.P = math.NaN(), math.NaN()
	case s == 0 && m == 0:
		r.T, r.P = 0, 1
	case s == 0:
		r.T, r.P = math.Copysign(math.Inf(1), m), 0
	default:
		r.T = m / (s / math.Sqrt(float64(n)))
		r.P = mathext.RegIncBeta(r.DF/2, 0.5, r.DF/(r.DF+r.T*r.T))
	}
	return r, nil
}
