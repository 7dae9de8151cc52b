package criterion

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/floats/scalar"
)

func TestEnergyValues(t *testing.T) {
	tests := []struct {
		eps      float64
		L        [][]float64
		want     float64
		wantGrad [][]float64
	}{
		{0, [][]float64{{0, 0}, {1, 0}}, 2, [][]float64{{4, 0}, {-4, 0}}},
		{1, [][]float64{{0, 0}, {1, 0}}, 1, [][]float64{{1, 0}, {-1, 0}}},
		{0, [][]float64{{0, 0}, {1, 0}, {0, 2}}, 2 * (1 + 1.0/4 + 1.0/5),
			[][]float64{{4, 0.5}, {-4.16, 0.32}, {0.16, -0.82}}},
		{0.5, [][]float64{{3, 1}}, 0, [][]float64{{0, 0}}},
	}
	for _, tt := range tests {
		e, err := NewEnergy(ab, tt.eps)
		if err != nil {
			t.Fatal(err)
		}
		grad := make([][]float64, len(tt.L))
		for k := range grad {
			grad[k] = make([]float64, 2)
		}
		got, err := e.EvalMulti(tt.L, grad)
		if err != nil {
			t.Fatalf("%v: %v", tt.L, err)
		}
		if !scalar.EqualWithinAbsOrRel(got, tt.want, valueTol, valueTol) {
			t.Errorf("energy(eps=%g) of %v = %v, want %v", tt.eps, tt.L, got, tt.want)
		}
	rows:
		for k := range grad {
			for i := range grad[k] {
				if !scalar.EqualWithinAbsOrRel(grad[k][i], tt.wantGrad[k][i], valueTol, valueTol) {
					t.Errorf("energy(eps=%g) of %v: gradient %v, want %v", tt.eps, tt.L, grad, tt.wantGrad)
					break rows
				}
			}
		}
	}
}

func TestEnergyGradientFiniteDifference(t *testing.T) {
	const (
		trials = 20
		models = 4
	)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, eps := range []float64{0, DefaultEnergyEps, 0.1} {
		e, err := NewEnergy(abc, eps)
		if err != nil {
			t.Fatal(err)
		}
		m := len(abc)
		for range trials {
			flat := make([]float64, models*m)
			for i := range flat {
				flat[i] = rng.Float64()
			}
			rows := func(x []float64) [][]float64 {
				L := make([][]float64, models)
				for k := range L {
					L[k] = x[k*m : (k+1)*m]
				}
				return L
			}
			f := func(x []float64) float64 {
				v, err := e.EvalMulti(rows(x), nil)
				if err != nil {
					return math.NaN()
				}
				return v
			}
			gflat := make([]float64, models*m)
			if _, err := e.EvalMulti(rows(flat), rows(gflat)); err != nil {
				t.Fatal(err)
			}
			want := fd.Gradient(nil, f, flat, &fd.Settings{Formula: fd.Central, Step: 1e-7})
			for i := range want {
				// Energies reach 1e4 at close points: compare relatively.
				if !scalar.EqualWithinAbsOrRel(gflat[i], want[i], fdAbsTol, 1e-4) {
					t.Errorf("eps %g at %v: ∂E[%d] = %v, central difference %v", eps, flat, i, gflat[i], want[i])
				}
			}
		}
	}
}

func TestParseMulti(t *testing.T) {
	tests := []struct {
		spec string
		norm string
		msg  string // non-empty: expected error substring
	}{
		{"energy", "energy:eps=0.0001", ""},
		{" energy:eps=1e-3", "energy:eps=0.001", ""},
		{"energy:eps=0", "energy:eps=0", ""},
		{"energy:eps=-1", "", "non-negative"},
		{"energy:eps=x", "", "non-negative"},
		{"energy:tol=1", "", "expected eps=VALUE"},
		{"wd:1,2", "", "unknown multi-point criterion"},
	}
	for _, tt := range tests {
		c, err := ParseMulti(tt.spec, ab)
		if tt.msg != "" {
			var pe *PresetError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("ParseMulti(%q): got %v, want *PresetError containing %q", tt.spec, err, tt.msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseMulti(%q): %v", tt.spec, err)
			continue
		}
		if c.String() != tt.norm {
			t.Errorf("ParseMulti(%q).String() = %q, want %q", tt.spec, c.String(), tt.norm)
		}
		if again, err := ParseMulti(c.String(), ab); err != nil || again.String() != c.String() {
			t.Errorf("ParseMulti(%q) round trip: %v, %v", c.String(), again, err)
		}
	}
}

func TestEnergyErrors(t *testing.T) {
	e, err := NewEnergy(ab, 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		L   [][]float64
		msg string
	}{
		{[][]float64{{1, 1}, {1, 1}}, "identical losses and eps is 0"},
		{[][]float64{{1, 1}, {1}}, "model 1 has 1 losses, expected 2"},
		{[][]float64{{1, math.NaN()}, {1, 2}}, "model 0 loss b is NaN"},
		{[][]float64{{0, 0}, {1e-160, 0}}, "overflowed"},
	}
	for _, tt := range tests {
		if _, err := e.EvalMulti(tt.L, nil); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("EvalMulti(%v): got %v, want error containing %q", tt.L, err, tt.msg)
		}
	}
	if _, err := NewEnergy(ab, math.NaN()); err == nil {
		t.Error("NewEnergy with NaN eps: no error")
	}
	e.Eps = -1
	if _, err := e.EvalMulti([][]float64{{0, 0}, {1, 1}}, nil); err == nil || !strings.Contains(err.Error(), "eps is -1") {
		t.Errorf("EvalMulti with eps -1: got %v, want an error naming eps", err)
	}
}

func TestEnergyImplementsMulti(t *testing.T) {
	m, err := ParseMulti("energy", ab)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*Energy); !ok {
		t.Errorf("ParseMulti(energy) returned %T, want *Energy", m)
	}
	if got := m.Tasks(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("Tasks() = %v, want [a b]", got)
	}
}
