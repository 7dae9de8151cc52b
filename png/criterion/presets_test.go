package criterion

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

var ab = []string{"a", "b"}

func TestPresetValues(t *testing.T) {
	tests := []struct {
		spec     string
		tasks    []string
		x        []float64
		want     float64
		wantGrad []float64
		norm     string
	}{
		{"wd:0.2,0.8", ab, []float64{0.4, 0.4}, 0.4, []float64{2, -1}, "wd:0.2,0.8"},
		{"wd: .2 , 8e-1", ab, []float64{0.2, 0.8}, 0, []float64{0, 0}, "wd:0.2,0.8"},
		{"ratio:1,1", ab, []float64{1, 1}, 0, []float64{0, 0}, "ratio:1,1"},
		{"ratio:1,2", ab, []float64{2, 1}, 0, []float64{0, 0}, "ratio:1,2"},
		{"ratio:1,3", ab, []float64{1, 1}, 0.25*math.Log(0.5) + 0.75*math.Log(1.5), nil, "ratio:1,3"},
		{"ratio:1,1,1", abc, []float64{0.5, 0.5, 0.5}, 0, []float64{0, 0, 0}, "ratio:1,1,1"},
		{"cosine:0.2,0.4", ab, []float64{0.2, 0.4}, 3, []float64{0, 0}, "cosine:0.2,0.4"},
		{"cosine:0.2,0.4", ab, []float64{1.2, 0.9}, 1, nil, "cosine:0.2,0.4"},
		{"cosine:-0.5,0", ab, []float64{-0.5, 1}, -1, nil, "cosine:-0.5,0"},
	}
	for _, tt := range tests {
		c, err := Parse(tt.spec, tt.tasks)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.spec, err)
			continue
		}
		if c.String() != tt.norm {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.spec, c.String(), tt.norm)
		}
		grad := make([]float64, len(tt.x))
		got, err := c.Eval(tt.x, grad)
		if err != nil {
			t.Errorf("%s at %v: %v", tt.spec, tt.x, err)
			continue
		}
		if !scalar.EqualWithinAbsOrRel(got, tt.want, valueTol, valueTol) {
			t.Errorf("%s at %v = %v, want %v", tt.spec, tt.x, got, tt.want)
		}
		for i := range tt.wantGrad {
			if !scalar.EqualWithinAbs(grad[i], tt.wantGrad[i], valueTol) {
				t.Errorf("%s at %v: gradient %v, want %v", tt.spec, tt.x, grad, tt.wantGrad)
				break
			}
		}
	}
}

func TestPresetGradientFiniteDifference(t *testing.T) {
	const points = 30
	tests := []struct {
		spec  string
		tasks []string
	}{
		{"wd:0.2,0.8", ab},
		{"wd:1,0.5,2", abc},
		{"ratio:1,2", ab},
		{"ratio:0.3,1,2", abc},
		{"cosine:0.2,0.4", ab},
		{"cosine:0.9,0.1", ab},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tt := range tests {
		c, err := Parse(tt.spec, tt.tasks)
		if err != nil {
			t.Fatal(err)
		}
		for range points {
			x := make([]float64, len(tt.tasks))
			for i := range x {
				x[i] = 0.05 + 1.5*rng.Float64()
			}
			checkGrad(t, c, x)
		}
	}
}

func TestPresetErrors(t *testing.T) {
	tests := []struct {
		spec   string
		tasks  []string
		preset string
		msg    string
	}{
		{"wd:0.2", ab, "wd", "got 1 references, expected 2 (one per task: a, b)"},
		{"ratio:1,2,3", ab, "ratio", "got 3 references, expected 2"},
		{"cosine:1,2,3", abc, "cosine", "exactly 2 tasks, have 3"},
		{"wd:0,1", ab, "wd", "reference 1 (task a) is 0; expected a positive number"},
		{"ratio:1,-2", ab, "ratio", "expected a positive number"},
		{"wd:1,x", ab, "wd", `reference 2 is "x"; expected a decimal number`},
		{"wd:1,", ab, "wd", `reference 2 is ""`},
		{"wd:1,inf", ab, "wd", `reference 2 is "inf"`},
		{"wd:1,2^2", ab, "wd", `reference 2 is "2^2"`},
		{"epo:1,2", ab, "epo", "unknown preset; expected one of wd, ratio, cosine"},
		{"energy", ab, "energy", "use it with --models N"},
		{"energy:eps=0.1", ab, "energy", "multi-point"},
		{"wd", ab, "wd", "wd:r1,...,r2"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.spec, tt.tasks)
		var pe *PresetError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q): got %v, want *PresetError", tt.spec, err)
			continue
		}
		if pe.Preset != tt.preset || !strings.Contains(pe.Msg, tt.msg) {
			t.Errorf("Parse(%q): preset %q %q, want %q containing %q", tt.spec, pe.Preset, pe.Msg, tt.preset, tt.msg)
		}
	}
}

func TestRatioNeedsPositiveLosses(t *testing.T) {
	c, err := Parse("ratio:1,1", ab)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Eval([]float64{0, 1}, nil)
	var ee *EvalError
	if !errors.As(err, &ee) || ee.Op != "log" {
		t.Errorf("ratio at a zero loss: got %v, want a log *EvalError", err)
	}
}
