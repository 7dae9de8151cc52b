package bench

import (
	"fmt"
	"strings"
)

// Variant is one PNG setting of the paper's α/γ ablation (appendix,
// "Ablation Study", MultiMNIST): the control φ = α·g, the threshold
// e = γ·ē.
type Variant struct {
	Alpha, Gamma float64
}

// Name is the variant's method name in points and results: "png" for the
// default (α = 0.5, γ = 0.1, the png of the main table), else
// "png_a<α>_g<γ>".
func (v Variant) Name() string {
	if v == DefaultVariant {
		return "png"
	}
	return fmt.Sprintf("png_a%g_g%g", v.Alpha, v.Gamma)
}

// Label is the variant as the ablation table shows it.
func (v Variant) Label() string { return fmt.Sprintf("α=%g, γ=%g", v.Alpha, v.Gamma) }

// DefaultVariant is PNG's default setting, the main table's png.
var DefaultVariant = Variant{Alpha: 0.5, Gamma: 0.1}

// AblationRows are the paper's ablation table in its order: α ∈ {0.25,
// 0.5, 0.75} at γ = 0.1, then γ ∈ {0.01, 0.1, 0.25} at α = 0.5. The
// default (0.5, 0.1) appears in both groups and is trained once: it is
// the main table's png.
var AblationRows = []Variant{
	{0.25, 0.1}, {0.5, 0.1}, {0.75, 0.1},
	{0.5, 0.01}, {0.5, 0.1}, {0.5, 0.25},
}

// AblationVariants are the settings the ablation trains beyond the main
// table's png: the distinct AblationRows other than DefaultVariant.
func AblationVariants() []Variant {
	var out []Variant
	seen := map[Variant]bool{DefaultVariant: true}
	for _, v := range AblationRows {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// variantByName returns the variant with Name name.
func variantByName(name string) (Variant, bool) {
	if name == "png" {
		return DefaultVariant, true
	}
	for _, v := range AblationVariants() {
		if v.Name() == name {
			return v, true
		}
	}
	return Variant{}, false
}

// isAblation reports whether method names an ablation variant (not one of
// Methods).
func isAblation(method string) bool { return strings.HasPrefix(method, "png_") }

// ablationNames are the methods of the ablation table, png first, then
// the variants.
func ablationNames() []string {
	out := []string{"png"}
	for _, v := range AblationVariants() {
		out = append(out, v.Name())
	}
	return out
}

// measureAblation computes the ablation table's metrics of one seed: for
// png and every variant, HV as in the main table and IGD+ against the
// non-dominated union of the main methods' and every variant's points,
// so that the rows compare with each other. nil when pts hold no variant.
func measureAblation(pts []Point) map[string]map[string]float64 {
	has := false
	for _, p := range pts {
		has = has || isAblation(p.Method)
	}
	if !has {
		return nil
	}
	out := measureAmong(pts, ablationNames(), func(string) bool { return true })
	return out
}
