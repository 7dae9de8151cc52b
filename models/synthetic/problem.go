package synthetic

import (
	"fmt"
	"math"
	"strings"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
)

// Names lists the known problem names, as New accepts them.
var Names = []string{"exp2", "zdt2v"}

// Problem is one synthetic two-task problem with its current parameters.
// It implements finetune.Problem; the batch is ignored.
type Problem struct {
	name  string
	theta []float32
	// eval writes the two losses at x and, when g1/g2 are not nil, their
	// gradients.
	eval func(x []float64, g1, g2 []float64) (l1, l2 float64)
}

// New returns the problem with the given name ("exp2" or "zdt2v"),
// starting at DefaultInit.
func New(name string) (*Problem, error) {
	switch name {
	case "exp2":
		return Exp2(), nil
	case "zdt2v":
		return ZDT2V(), nil
	}
	return nil, fmt.Errorf("synthetic: unknown problem %q; known problems: %s", name, strings.Join(Names, ", "))
}

// DefaultInit returns the paper's starting point in n dimensions:
// θ = (0.6, −0.3, …, −0.3).
func DefaultInit(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = -0.3
	}
	if n > 0 {
		x[0] = 0.6
	}
	return x
}

// Name returns the problem's name.
func (p *Problem) Name() string { return p.name }

// Tasks returns the task names "l1" and "l2".
func (p *Problem) Tasks() []string { return []string{"l1", "l2"} }

// NumParams returns the dimension of θ (10 for exp2, 3 for zdt2v).
func (p *Problem) NumParams() int { return len(p.theta) }

// Params copies θ into dst, which must have length NumParams.
func (p *Problem) Params(dst []float32) {
	if len(dst) != len(p.theta) {
		panic(fmt.Sprintf("synthetic: Params: dst has length %d, expected %d", len(dst), len(p.theta)))
	}
	copy(dst, p.theta)
}

// SetParams replaces θ with src.
func (p *Problem) SetParams(src []float32) error {
	if len(src) != len(p.theta) {
		return fmt.Errorf("synthetic: %s: SetParams got %d parameters, expected %d", p.name, len(src), len(p.theta))
	}
	for i, v := range src {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("synthetic: %s: parameter %d is %v; expected a finite number", p.name, i, v)
		}
	}
	copy(p.theta, src)
	return nil
}

// Evaluate writes the two losses at the current θ into losses and, when
// jac is not nil, their gradients into jac (2×n). The batch is ignored.
func (p *Problem) Evaluate(_ map[string]*importer.Tensor, losses []float64, jac *png.Jacobian) error {
	n := len(p.theta)
	if len(losses) != 2 {
		return fmt.Errorf("synthetic: %s: losses has length %d, expected 2", p.name, len(losses))
	}
	var g1, g2 []float64
	if jac != nil {
		if jac.M != 2 || jac.N != n || len(jac.Data) != 2*n {
			return fmt.Errorf("synthetic: %s: Jacobian is %d×%d with %d values, expected 2×%d", p.name, jac.M, jac.N, len(jac.Data), n)
		}
		g1, g2 = make([]float64, n), make([]float64, n)
	}
	l1, l2 := p.eval(widen(p.theta), g1, g2)
	losses[0], losses[1] = l1, l2
	if jac != nil {
		for i := range n {
			jac.Data[i] = float32(g1[i])
			jac.Data[n+i] = float32(g2[i])
		}
	}
	return nil
}

// Losses returns the two losses at x (length NumParams) in float64, and
// writes their gradients into g1 and g2 when they are not nil.
func (p *Problem) Losses(x, g1, g2 []float64) (l1, l2 float64) {
	n := len(p.theta)
	if len(x) != n || g1 != nil && len(g1) != n || g2 != nil && len(g2) != n {
		panic(fmt.Sprintf("synthetic: %s: Losses needs vectors of length %d", p.name, n))
	}
	return p.eval(x, g1, g2)
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}
