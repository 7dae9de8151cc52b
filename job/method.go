package job

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/paretonav/paretonav/png"
)

// MethodConfig names the update direction and its settings (--method,
// --alpha, --gamma, --weights, --preference).
type MethodConfig struct {
	Name       string  // png, mgd, linear or epo
	Alpha      float64 // PNG's α
	Gamma      float64 // PNG's γ
	Weights    string  // linear's task weights W1,W2,... ("" for equal)
	Preference string  // EPO's preference r1,r2,... ("" for 1 each)
}

// Build returns the png.Method mc names for the tasks.
func (mc MethodConfig) Build(tasks []string) (png.Method, error) {
	switch mc.Name {
	case "png":
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

// ParseFloats reads a comma-separated list of numbers given to flag.
func ParseFloats(flag, s string) ([]float64, error) {
	parts := strings.Split(s, ",")
	out := make([]float64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil, fmt.Errorf("%s %q: item %d (%q) is not a number", flag, s, i+1, strings.TrimSpace(p))
		}
		out[i] = v
	}
	return out, nil
}
