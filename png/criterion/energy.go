package criterion

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultEnergyEps is the ε added to every squared distance by the energy
// criterion when the spec gives none. Losses are typically of order 0.1–1,
// so ε = 1e-4 only matters for points closer than about 0.01, where the raw
// energy ‖L_i − L_j‖^{-2} and its gradient explode.
const DefaultEnergyEps = 1e-4

// Energy is the Riesz energy of N loss vectors, stabilised by Eps:
//
//	E(L_1..L_N) = Σ_{i≠j} 1 / (‖L_i − L_j‖² + ε)
//
// summed over ordered pairs, so each unordered pair counts twice. Its
// gradient is ∂E/∂L_k = −4 Σ_{j≠k} (L_k − L_j) / (‖L_k − L_j‖² + ε)².
// Minimising E spreads the models over the front. The gradient still grows
// like 1/ε^{3/2} for close points; callers that want only its direction may
// normalise each ∂E/∂L_k before use. Energy is safe for concurrent use.
type Energy struct {
	Eps   float64 // ε ≥ 0; with ε = 0 coincident points are an error
	tasks []string
}

// ParseMulti reads a multi-point criterion: "energy" (ε =
// DefaultEnergyEps) or "energy:eps=VALUE" with VALUE ≥ 0.
func ParseMulti(spec string, tasks []string) (Multi, error) {
	if err := checkTasks(tasks); err != nil {
		return nil, err
	}
	name, args, hasArgs := strings.Cut(strings.TrimSpace(spec), ":")
	if strings.TrimSpace(name) != "energy" {
		return nil, &PresetError{Preset: strings.TrimSpace(name), Msg: "unknown multi-point criterion; expected energy or energy:eps=VALUE"}
	}
	e := &Energy{Eps: DefaultEnergyEps, tasks: append([]string(nil), tasks...)}
	if !hasArgs {
		return e, nil
	}
	key, val, ok := strings.Cut(args, "=")
	if !ok || strings.TrimSpace(key) != "eps" {
		return nil, &PresetError{Preset: "energy", Msg: fmt.Sprintf("option %q not understood; expected eps=VALUE", args)}
	}
	val = strings.TrimSpace(val)
	toks, err := lex(val)
	if err != nil || len(toks) != 2 || toks[0].kind != tokNum {
		return nil, &PresetError{Preset: "energy", Msg: fmt.Sprintf("eps is %q; expected a non-negative decimal number such as 1e-4", val)}
	}
	e.Eps = toks[0].num
	return e, nil
}

// NewEnergy returns the energy criterion over the given tasks with the
// given ε (see Energy).
func NewEnergy(tasks []string, eps float64) (*Energy, error) {
	if err := checkTasks(tasks); err != nil {
		return nil, err
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("criterion: energy eps is %v; expected a finite number ≥ 0", eps)
	}
	return &Energy{Eps: eps, tasks: append([]string(nil), tasks...)}, nil
}

// Tasks returns the task names, in loss order.
func (e *Energy) Tasks() []string { return append([]string(nil), e.tasks...) }

// String returns "energy:eps=VALUE".
func (e *Energy) String() string {
	return "energy:eps=" + strconv.FormatFloat(e.Eps, 'g', -1, 64)
}

// EvalMulti returns E(L) and, when grad is not nil, writes ∂E/∂L_k into
// grad[k]. L has one row of m losses per model.
func (e *Energy) EvalMulti(L [][]float64, grad [][]float64) (float64, error) {
	if !(e.Eps >= 0) || math.IsInf(e.Eps, 0) {
		return 0, fmt.Errorf("criterion: energy eps is %v; expected a finite number ≥ 0", e.Eps)
	}
	m := len(e.tasks)
	for k, row := range L {
		if len(row) != m {
			return 0, fmt.Errorf("criterion: energy: model %d has %d losses, expected %d (tasks %v)", k, len(row), m, e.tasks)
		}
		for i, l := range row {
			if math.IsNaN(l) || math.IsInf(l, 0) {
				return 0, &EvalError{Op: "input", Msg: fmt.Sprintf("energy: model %d loss %s is %v; expected a finite number", k, e.tasks[i], l)}
			}
		}
	}
	if grad != nil {
		if len(grad) != len(L) {
			return 0, fmt.Errorf("criterion: energy: gradient has %d rows, expected %d (one per model)", len(grad), len(L))
		}
		for k := range grad {
			if len(grad[k]) != m {
				return 0, fmt.Errorf("criterion: energy: gradient row %d has length %d, expected %d", k, len(grad[k]), m)
			}
			for i := range grad[k] {
				grad[k][i] = 0
			}
		}
	}
	var total float64
	for a := range L {
		for b := a + 1; b < len(L); b++ {
			var d2 float64
			for i := range m {
				d := L[a][i] - L[b][i]
				d2 += d * d
			}
			den := d2 + e.Eps
			if den == 0 {
				return 0, &EvalError{Op: "energy", Msg: fmt.Sprintf("energy: models %d and %d have identical losses and eps is 0 (division by zero)", a, b)}
			}
			total += 2 / den
			if grad != nil {
				c := -4 / (den * den)
				for i := range m {
					d := L[a][i] - L[b][i]
					grad[a][i] += c * d
					grad[b][i] -= c * d
				}
			}
		}
	}
	if math.IsInf(total, 0) || math.IsNaN(total) {
		return 0, &EvalError{Op: "energy", Msg: fmt.Sprintf("energy overflowed to %v (points too close for eps %g)", total, e.Eps)}
	}
	for k := range grad {
		for i, g := range grad[k] {
			if math.IsInf(g, 0) || math.IsNaN(g) {
				return 0, &EvalError{Op: "energy", Msg: fmt.Sprintf("energy gradient for model %d task %s overflowed to %v", k, e.tasks[i], g)}
			}
		}
	}
	return total, nil
}

// ParseMultiPoint reads a multi-point criterion with an optional
// per-model part, "MULTI [+ EXPR]" such as "energy:eps=1e-3 + 0.01*drift":
// MULTI by ParseMulti, EXPR by Parse over the tasks and terms. The
// objective it stands for is MULTI(L_1..L_N) + Σ_k EXPR(x_k), with x_k
// model k's task losses, terms and drift. point is nil when spec has no
// '+'. Errors in EXPR give their column in spec.
func ParseMultiPoint(spec string, tasks []string, terms ...string) (multi Multi, point Criterion, err error) {
	ms, ps, col := splitMulti(spec)
	if multi, err = ParseMulti(ms, tasks); err != nil {
		return nil, nil, err
	}
	if col == 0 {
		return multi, nil, nil
	}
	if point, err = Parse(ps, tasks, terms...); err != nil {
		var se *SyntaxError
		var ue *UnknownNameError
		switch {
		case errors.As(err, &se):
			se.Col += col - 1
		case errors.As(err, &ue):
			ue.Col += col - 1
		}
		return nil, nil, err
	}
	return multi, point, nil
}

// splitMulti splits spec at its first '+' that is not a number's exponent
// sign (1e+3): multi before it, point after it, and col the 1-based column
// where point starts (0 when spec has no such '+').
func splitMulti(spec string) (multi, point string, col int) {
	for i := 0; i < len(spec); i++ {
		if spec[i] != '+' {
			continue
		}
		if i > 1 && (spec[i-1] == 'e' || spec[i-1] == 'E') && (isDigit(rune(spec[i-2])) || spec[i-2] == '.') {
			continue
		}
		return strings.TrimSpace(spec[:i]), spec[i+1:], utf8.RuneCountInString(spec[:i+1]) + 1
	}
	return strings.TrimSpace(spec), "", 0
}
