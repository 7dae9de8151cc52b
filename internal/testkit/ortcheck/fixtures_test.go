package ortcheck

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/importer"
)

// Tolerances for the fixture checks.
const (
	ortVsTorchTol  = 1e-5 // max |ORT - PyTorch| on any output element
	ortRepeatTol   = 1e-6 // max |ORT now - ORT recorded|
	lossRecomputed = 1e-5 // relative error of losses recomputed from outputs
)

func loadFixtures(t *testing.T) []*Fixture {
	t.Helper()
	names, err := FixtureNames()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*Fixture, 0, len(names))
	for _, n := range names {
		f, err := LoadFixture(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// TestFixturesORT validates the PyTorch fixtures against ONNX Runtime:
// the exported model, run in ORT, must reproduce PyTorch's outputs.
func TestFixturesORT(t *testing.T) {
	Require(t)
	for _, f := range loadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			got, err := Run(f.ModelPath, map[string]*importer.Tensor{f.InputName: f.Input})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(f.Outputs) {
				t.Errorf("ORT gives %d outputs, PyTorch %d", len(got), len(f.Outputs))
			}
			for name, want := range f.Outputs {
				g, ok := got[name]
				if !ok {
					t.Errorf("ORT output %q missing", name)
					continue
				}
				if d := maxAbsDiff(t, g, want); d > ortVsTorchTol {
					t.Errorf("%s: ORT and PyTorch differ by %g (tolerance %g)", name, d, ortVsTorchTol)
				}
				if rec, ok := f.ORT[name]; ok {
					if d := maxAbsDiff(t, g, rec); d > ortRepeatTol {
						t.Errorf("%s: ORT differs from its recorded output by %g", name, d)
					}
				}
			}
		})
	}
}

// TestFixturesConsistent checks each fixture's parts against each other:
// initializers against the recorded lists, one gradient per task and
// trainable initializer with its shape, and every loss recomputed from
// PyTorch's outputs and the targets with the documented semantics.
func TestFixturesConsistent(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			m, err := importer.Load(f.ModelPath)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Opset(""); got != int64(f.Opset) {
				t.Errorf("model opset %d, fixture says %d", got, f.Opset)
			}
			inits, err := m.Initializers()
			if err != nil {
				t.Fatal(err)
			}
			listed := append(append([]string(nil), f.Trainable...), f.Buffers...)
			if got, want := sortedKeys(inits), sorted(listed); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("initializers %v, fixture lists %v", got, want)
			}
			for torchName, onnxName := range f.StateDictToONNX {
				if _, ok := inits[onnxName]; !ok {
					t.Errorf("state_dict %s maps to missing initializer %s", torchName, onnxName)
				}
			}
			if len(f.Tasks) != len(f.Grads) || len(f.Tasks) != len(f.Losses) {
				t.Errorf("%d tasks, %d gradient sets, %d losses", len(f.Tasks), len(f.Grads), len(f.Losses))
			}
			for _, spec := range f.Tasks {
				task, kind, out, target, opts := parseSpec(t, spec)
				grads := f.Grads[task]
				if len(grads) != len(f.Trainable) {
					t.Errorf("task %s: %d gradients for %d trainable initializers", task, len(grads), len(f.Trainable))
				}
				for _, name := range f.Trainable {
					g, ok := grads[name]
					if !ok {
						t.Errorf("task %s: no gradient for %s", task, name)
						continue
					}
					if !slices.Equal(g.Shape, inits[name].Shape) {
						t.Errorf("task %s: gradient of %s has shape %v, initializer %v", task, name, g.Shape, inits[name].Shape)
					}
				}
				want, ok := f.Losses[task]
				if !ok {
					t.Errorf("task %s: no loss", task)
					continue
				}
				got := recomputeLoss(t, kind, f.Outputs[out], f.Targets[target], opts)
				if rel := math.Abs(got-want) / math.Max(math.Abs(want), 1e-12); rel > lossRecomputed {
					t.Errorf("task %s: %s recomputed from outputs = %.9g, fixture %.9g (rel %g)", task, kind, got, want, rel)
				}
			}
		})
	}
}

func parseSpec(t *testing.T, spec string) (task, kind, out, target string, opts map[string]string) {
	t.Helper()
	parts := strings.Split(spec, ":")
	if len(parts) < 4 || len(parts) > 5 {
		t.Fatalf("bad task spec %q", spec)
	}
	opts = map[string]string{}
	if len(parts) == 5 {
		for _, kv := range strings.Split(parts[4], ",") {
			k, v, _ := strings.Cut(kv, "=")
			opts[k] = v
		}
	}
	return parts[0], parts[1], parts[2], parts[3], opts
}

// recomputeLoss evaluates a loss kind in float64 from an output and a
// target, with the semantics make_fixtures.py documents.
func recomputeLoss(t *testing.T, kind string, out, target *importer.Tensor, opts map[string]string) float64 {
	t.Helper()
	if out == nil || target == nil {
		t.Fatalf("%s: output or target missing", kind)
	}
	o := out.Float64s()
	n, c := out.Shape[0], out.Shape[1]
	plane := out.Len() / (n * c) // pixels per sample (1 for classification)
	switch kind {
	case "nll":
		ignore := int64(math.MinInt64)
		if v, ok := opts["ignore_index"]; ok {
			i, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("ignore_index %q: %v", v, err)
			}
			ignore = i
		}
		labels := target.Int64s()
		var sum float64
		var count int
		for s := 0; s < n; s++ {
			for p := 0; p < plane; p++ {
				l := labels[s*plane+p]
				if l == ignore {
					continue
				}
				sum -= o[(s*c+int(l))*plane+p]
				count++
			}
		}
		return sum / float64(count)
	case "depth_l1", "normal_cos":
		tv := target.Float64s()
		var sum, count float64
		for s := 0; s < n; s++ {
			for p := 0; p < plane; p++ {
				var tsum float64
				for ch := 0; ch < c; ch++ {
					tsum += tv[(s*c+ch)*plane+p]
				}
				if tsum == 0 {
					continue
				}
				count++
				for ch := 0; ch < c; ch++ {
					i := (s*c+ch)*plane + p
					if kind == "depth_l1" {
						sum += math.Abs(o[i] - tv[i])
					} else {
						sum += o[i] * tv[i]
					}
				}
			}
		}
		if kind == "depth_l1" {
			return sum / count
		}
		return 1 - sum/count
	}
	t.Fatalf("unknown loss kind %q", kind)
	return 0
}

func maxAbsDiff(t *testing.T, a, b *importer.Tensor) float64 {
	t.Helper()
	if !slices.Equal(a.Shape, b.Shape) {
		t.Fatalf("%s: shape %v vs %v", a.Name, a.Shape, b.Shape)
	}
	av, bv := a.Float64s(), b.Float64s()
	var d float64
	for i := range av {
		d = math.Max(d, math.Abs(av[i]-bv[i]))
	}
	return d
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}
