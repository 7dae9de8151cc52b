package job

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/paretonav/paretonav/png"
)

// MethodConfig names the update direction and its settings (--method,
// --alpha, --gamma, --weights, --preference).
type MethodConfig struct {
	Name       string  `flag:"method"`     // png, mgd, linear or epo
	Alpha      float64 `flag:"alpha"`      // PNG's α
	Gamma      float64 `flag:"gamma"`      // PNG's γ
	Weights    string  `flag:"weights"`    // linear's task weights W1,W2,... ("" for equal)
	Preference string  `flag:"preference"` // EPO's preference r1,r2,... ("" for 1 each)
	// MGDSteps > 0 makes the first MGDSteps directions MGD's, then the
	// method's (png.Staged): the paper's protocol for the complex-cosine
	// criterion on ZDT2-variant (150 steps).
	MGDSteps int `flag:"mgd-steps"`
}

// Build returns the png.Method mc names for the tasks.
func (mc MethodConfig) Build(tasks []string) (png.Method, error) {
	m, err := mc.build(tasks)
	switch {
	case err != nil || mc.MGDSteps == 0:
		return m, err
	case mc.MGDSteps < 0:
		return nil, fmt.Errorf("--mgd-steps %d: want 0 or more steps", mc.MGDSteps)
	case mc.Name == "mgd":
		return nil, fmt.Errorf("--mgd-steps %d with --method mgd: the whole run already follows MGD", mc.MGDSteps)
	}
	return png.Staged{Steps: mc.MGDSteps, First: png.MGD{}, Then: m}, nil
}

// build returns the method mc.Name names, without MGDSteps.
func (mc MethodConfig) build(tasks []string) (png.Method, error) {
	switch mc.Name {
	case "png":
		if err := CheckPNG(mc.Alpha, mc.Gamma); err != nil {
			return nil, err
		}
		return png.PNG{Settings: png.Settings{Alpha: mc.Alpha, Gamma: mc.Gamma}}, nil
	case "mgd":
		return png.MGD{}, nil
	case "linear":
		var w []float64
		if s := mc.Weights; s != "" {
			var err error
			if w, err = ParseFloats("--weights", s); err != nil {
				return nil, err
			}
			if len(w) != len(tasks) {
				return nil, fmt.Errorf("--weights %q: %d weights, want one per task (%s)", s, len(w), strings.Join(tasks, ", "))
			}
		}
		return png.Linear{Weights: w}, nil
	case "epo":
		var r []float64
		if s := mc.Preference; s != "" {
			var err error
			if r, err = ParseFloats("--preference", s); err != nil {
				return nil, err
			}
			if len(r) != len(tasks) {
				return nil, fmt.Errorf("--preference %q: %d weights, want one per task (%s)", s, len(r), strings.Join(tasks, ", "))
			}
			for i, v := range r {
				if !(v > 0) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("--preference %q: item %d (%v) must be a positive finite number", s, i+1, v)
				}
			}
		}
		return png.EPO{Preference: r}, nil
	default:
		return nil, fmt.Errorf("--method %q: want png, mgd, linear or epo", mc.Name)
	}
}

// CheckPNG checks PNG's α (--alpha) and γ (--gamma) before a run starts:
// each must be a positive finite number, as in the paper (φ = α·g with
// α > 0; the threshold e = γ·ē with γ > 0); 0 stands for the default.
func CheckPNG(alpha, gamma float64) error {
	if err := CheckPositive("--alpha", alpha, fmt.Sprintf("α > 0 in the control φ = α·g; default %g", png.DefaultAlpha)); err != nil {
		return err
	}
	return CheckPositive("--gamma", gamma, fmt.Sprintf("γ > 0 in the threshold e = γ·ē; default %g", png.DefaultGamma))
}

// CheckPositive refuses v, the value of flag, unless it is 0 (the
// default) or a positive finite number; what says what the number is.
func CheckPositive(flag string, v float64, what string) error {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%s %v: want a positive finite number (%s)", flag, v, what)
	}
	return nil
}

// CheckMomentum refuses an SGD momentum outside [0, 1) (--momentum).
func CheckMomentum(mu float64) error {
	if !(mu >= 0 && mu < 1) {
		return fmt.Errorf("--momentum %v: want 0 ≤ μ < 1 (SGD's momentum; 0: none)", mu)
	}
	return nil
}

// ParseFloats reads a comma-separated list of numbers given to flag.
func ParseFloats(flag, s string) ([]float64, error) {
	parts := strings.Split(s, ",")
	out := make([]float64, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if _, err := strconv.ParseFloat(p, 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("%s %q: item %d (%q) is not a number", flag, s, i+1, p)
		}
		v, err := ParseFloat(fmt.Sprintf("%s %q: item %d", flag, s, i+1), p)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// ParseFloat parses s, the value of flag, as a finite float64. NaN,
// ±Inf, numbers beyond float64's range and non-zero numbers that round to
// 0 are refused with an error naming flag and what was expected.
func ParseFloat(flag, s string) (float64, error) {
	v, err := ParseFiniteFloat(s)
	if err != nil {
		if _, perr := strconv.ParseFloat(strings.TrimSpace(s), 64); perr != nil && !errors.Is(perr, strconv.ErrRange) {
			return 0, fmt.Errorf("%s %q: %w", flag, s, err)
		}
		return 0, fmt.Errorf("%s %s: %w", flag, s, err)
	}
	return v, nil
}

// ParseFiniteFloat is ParseFloat for a caller that names the flag and the
// text itself (a flag.Value's Set): its errors say only what is wrong.
func ParseFiniteFloat(s string) (float64, error) {
	t := strings.TrimSpace(s)
	v, err := strconv.ParseFloat(t, 64)
	switch {
	case err != nil && math.IsInf(v, 0):
		return 0, fmt.Errorf("too large for a float64 (largest %.4g); want a finite number", math.MaxFloat64)
	case err != nil:
		return 0, errors.New("want a number")
	case math.IsNaN(v):
		return 0, errors.New("want a number, not NaN")
	case math.IsInf(v, 0):
		return 0, errors.New("want a finite number")
	case v == 0 && nonZeroDigits(t):
		return 0, fmt.Errorf("too small for a float64 (it rounds to 0; smallest %.4g); want 0 or a larger number", math.SmallestNonzeroFloat64)
	}
	return v, nil
}

// nonZeroDigits reports whether the mantissa of the number s has a digit
// other than 0.
func nonZeroDigits(s string) bool {
	s = strings.TrimLeft(s, "+-")
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		s = s[2:]
		if i := strings.IndexAny(s, "pP"); i >= 0 {
			s = s[:i]
		}
		return strings.ContainsAny(s, "123456789abcdefABCDEF")
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	return strings.ContainsAny(s, "123456789")
}

// EvenPreferences returns N preference vectors for two tasks evenly spread
// over the simplex with the extremes excluded: (w_k, 1 − w_k) with
// w_k = (k + ½)/N, the weights the MultiMNIST benchmark gives linear
// scalarization and EPO (0.1, 0.3, …, 0.9 for N = 5).
func EvenPreferences(N int) [][]float64 {
	out := make([][]float64, N)
	for k := range out {
		w := (float64(k) + 0.5) / float64(N)
		out[k] = []float64{w, 1 - w}
	}
	return out
}

// ParsePreferences reads EPO's per-model preferences "R1,R2,...;R1,R2,...;..."
// given to flag: N vectors of one positive weight per task. An empty spec
// means EvenPreferences(N), for two tasks only.
func ParsePreferences(flag, spec string, N int, tasks []string) ([][]float64, error) {
	if strings.TrimSpace(spec) == "" {
		if len(tasks) != 2 {
			return nil, fmt.Errorf("%s: the default preferences are for 2 tasks; give %d vectors of %d weights (%s) as R1,R2,...;R1,R2,...", flag, N, len(tasks), strings.Join(tasks, ", "))
		}
		return EvenPreferences(N), nil
	}
	parts := strings.Split(spec, ";")
	if len(parts) != N {
		return nil, fmt.Errorf("%s %q: %d preference vectors, want one per model (%d), separated by ';'", flag, spec, len(parts), N)
	}
	out := make([][]float64, N)
	for k, p := range parts {
		r, err := ParseFloats(fmt.Sprintf("%s (model %d)", flag, k), p)
		if err != nil {
			return nil, err
		}
		if len(r) != len(tasks) {
			return nil, fmt.Errorf("%s %q: model %d has %d weights, want one per task (%s)", flag, spec, k, len(r), strings.Join(tasks, ", "))
		}
		for i, v := range r {
			if !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s %q: model %d, item %d (%v) must be a positive finite number", flag, spec, k, i+1, v)
			}
		}
		out[k] = r
	}
	return out, nil
}

// EPOCriterion is the criterion reported beside EPO when none is given:
// ratio:R1,...,Rm with EPO's preference (1 each when none), whose value is
// the non-uniformity μ that EPO drives to zero. EPO itself ignores the
// criterion.
func (mc MethodConfig) EPOCriterion(m int) string {
	if mc.Preference != "" {
		return "ratio:" + mc.Preference
	}
	return "ratio:" + strings.TrimSuffix(strings.Repeat("1,", m), ",")
}
