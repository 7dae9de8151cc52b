package criterion

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// presetNames lists the single-point presets Parse accepts.
var presetNames = []string{"wd", "ratio", "cosine"}

// parsePreset builds the tree of the preset name with the references in
// args over the first len(tasks) variables; its root carries the preset's
// normalised text.
func parsePreset(name, args string, tasks []string) (*node, error) {
	m := len(tasks)
	switch name {
	case "wd", "ratio", "cosine":
	case "energy":
		return nil, &PresetError{Preset: "energy", Msg: "energy is a multi-point criterion: it spreads several models over the front; use it with --models N (front or synth), not with one model"}
	default:
		return nil, &PresetError{Preset: name, Msg: fmt.Sprintf("unknown preset; expected one of %s (or a free expression, which has no ':')", strings.Join(presetNames, ", "))}
	}
	refs, err := parseRefs(name, args)
	if err != nil {
		return nil, err
	}
	if name == "cosine" && m != 2 {
		return nil, &PresetError{Preset: name, Msg: fmt.Sprintf("defined for exactly 2 tasks, have %d (%s)", m, strings.Join(tasks, ", "))}
	}
	if len(refs) != m {
		return nil, &PresetError{Preset: name, Msg: fmt.Sprintf("got %d references, expected %d (one per task: %s)", len(refs), m, strings.Join(tasks, ", "))}
	}
	if name != "cosine" {
		for i, r := range refs {
			if r <= 0 {
				return nil, &PresetError{Preset: name, Msg: fmt.Sprintf("reference %d (task %s) is %g; expected a positive number", i+1, tasks[i], r)}
			}
		}
	}
	var root *node
	switch name {
	case "wd":
		root = wdTree(refs)
	case "ratio":
		root = ratioTree(refs)
	case "cosine":
		root = cosineTree(refs)
	}
	root.preset = presetText(name, refs)
	return root, nil
}

// parseRefs reads the comma-separated references of a preset: finite
// decimal numbers, optionally negative.
func parseRefs(name, args string) ([]float64, error) {
	var refs []float64
	for i, s := range strings.Split(args, ",") {
		s = strings.TrimSpace(s)
		body := strings.TrimPrefix(s, "-")
		toks, err := lex(body)
		if err != nil || len(toks) != 2 || toks[0].kind != tokNum {
			return nil, &PresetError{Preset: name, Msg: fmt.Sprintf("reference %d is %q; expected a decimal number such as 0.25", i+1, s)}
		}
		v := toks[0].num
		if body != s {
			v = -v
		}
		refs = append(refs, v)
	}
	return refs, nil
}

// presetText is the normalised form of a preset.
func presetText(name string, refs []float64) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = strconv.FormatFloat(r, 'g', -1, 64)
	}
	return name + ":" + strings.Join(parts, ",")
}

// sum adds the terms left to right.
func sum(terms []*node) *node {
	s := terms[0]
	for _, t := range terms[1:] {
		s = bin(opAdd, s, t)
	}
	return s
}

// wdTree builds Σ (ℓ_i − r_i)² / r_i.
func wdTree(r []float64) *node {
	terms := make([]*node, len(r))
	for i, ri := range r {
		d := bin(opSub, vr(i), num(ri))
		terms[i] = bin(opDiv, bin(opMul, d, d), num(ri))
	}
	return sum(terms)
}

// ratioTree builds EPO's non-uniformity Σ p_i log(m p_i) with
// p_i = r_i ℓ_i / Σ_s r_s ℓ_s. It is defined for positive losses.
func ratioTree(r []float64) *node {
	m := len(r)
	w := make([]*node, m)
	for i, ri := range r {
		w[i] = bin(opMul, num(ri), vr(i))
	}
	s := sum(w)
	terms := make([]*node, m)
	for i := range r {
		p := bin(opDiv, w[i], s)
		terms[i] = bin(opMul, p, fn(opLog, bin(opMul, num(float64(m)), p)))
	}
	return sum(terms)
}

// cosineTree builds −cos(π(ℓ1 − r1)/2) + (cos(π(ℓ2 − r2)) + 1)².
func cosineTree(r []float64) *node {
	a := fn(opCos, bin(opDiv, bin(opMul, num(math.Pi), bin(opSub, vr(0), num(r[0]))), num(2)))
	b := bin(opAdd, fn(opCos, bin(opMul, num(math.Pi), bin(opSub, vr(1), num(r[1])))), num(1))
	return bin(opAdd, fn(opNeg, a), bin(opMul, b, b))
}
