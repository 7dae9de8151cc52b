package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/job"
	"github.com/paretonav/paretonav/models"
)

// pointModel writes dir/point.onnx, y = x + w with w = w0 (2 weights),
// and 16 examples of x = 0 with targets a = (0,0) and b = (2,0): the task
// losses p = mse(y, a) = ½‖w‖² and q = mse(y, b) = ½‖w − (2,0)‖², whose
// Pareto set is the segment from (0,0) to (2,0). Every batch gives the
// same losses, so a run is deterministic.
func pointModel(t *testing.T, dir string, w0 [2]float32) (model, data string) {
	t.Helper()
	dims := &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{
		{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "N"}}, {Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 2}}}}
	vi := func(name string) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(importer.Float32)), Shape: dims}}}}
	}
	w, err := importer.EncodeTensor(importer.NewFloat32("w", []int{2}, w0[:]))
	if err != nil {
		t.Fatal(err)
	}
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(7), OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(13)}},
		Graph: &onnxpb.GraphProto{Name: proto.String("point"),
			Node:        []*onnxpb.NodeProto{{Name: proto.String("add"), OpType: proto.String("Add"), Input: []string{"x", "w"}, Output: []string{"y"}}},
			Initializer: []*onnxpb.TensorProto{w}, Input: []*onnxpb.ValueInfoProto{vi("x")}, Output: []*onnxpb.ValueInfoProto{vi("y")}}}
	model, data = filepath.Join(dir, "point.onnx"), filepath.Join(dir, "point.npz")
	if err := models.WriteModel(model, mp); err != nil {
		t.Fatal(err)
	}
	const n = 16
	a, b := make([]float32, 2*n), make([]float32, 2*n)
	for i := 0; i < n; i++ {
		b[2*i] = 2
	}
	if err := npz.Write(data, map[string]*importer.Tensor{"x": importer.NewFloat32("x", []int{n, 2}, make([]float32, 2*n)),
		"a": importer.NewFloat32("a", []int{n, 2}, a), "b": importer.NewFloat32("b", []int{n, 2}, b)}); err != nil {
		t.Fatal(err)
	}
	return model, data
}

// TestTuneExplains: tune's summary and its --json say why F rose while
// both losses fell (they fell past their wd targets, far from the front,
// where the control was on at every step), and detect a target beyond the
// front, held by the trade test or by the front itself, with the closest
// point reached.
func TestTuneExplains(t *testing.T) {
	for _, tc := range []struct {
		name  string
		w0    [2]float32
		crit  string
		steps string
		text  []string
		check func(t *testing.T, ex map[string]any, res tuneOutcome)
	}{
		{
			name: "F rose while the losses fell past their wd targets far from the front",
			w0:   [2]float32{0.2, 3}, crit: "wd:4.5,6", steps: "30",
			text: []string{
				"in the Pareto band (g ≤ e) at 0% of the last 30 steps",
				"the control was on at 30 of 30 steps", "30 far from the Pareto front (g > e; g/e 8.46 at the first step, 7.81 at the last)",
				"F rose from 0.002489 to 0.2406 on the training data: p fell 4.52 → 3.672", "below its target 4.5, which F counts as a cost",
				"why: the run was far from the Pareto front, where PNG lowers every loss (p, q included) before it descends F",
				"to try:", "more steps", "--gamma", "(--criterion wd:3.672,6)",
			},
			check: func(t *testing.T, ex map[string]any, res tuneOutcome) {
				if !(res.After.F > res.Before.F) || !(res.After.Losses["p"] < res.Before.Losses["p"]) || !(res.After.Losses["q"] < res.Before.Losses["q"]) {
					t.Fatalf("the run did not raise F while lowering the losses: before %+v, after %+v", res.Before, res.After)
				}
				f := ex["F"].(map[string]any)
				if f["rose"] != true {
					t.Errorf("F = %v, want rose", f)
				}
				p := f["parts"].([]any)[0].(map[string]any)
				if p["name"] != "p" || p["cause"] != "past_target" || math.Abs(p["target"].(float64)-4.5) > 1e-9 {
					t.Errorf("part = %v, want p past its target 4.5", p)
				}
				c := ex["control"].(map[string]any)
				if c["on"].(float64) != 30 || c["far"].(float64) != 30 || c["improper"].(float64) != 0 {
					t.Errorf("control = %v, want on at 30 steps, all far from the front", c)
				}
				if res.BandSteps != 30 || res.InBand != 0 {
					t.Errorf("in_band_last100 %v over %d steps, want 0 over 30", res.InBand, res.BandSteps)
				}
			},
		},
		{
			name: "a target beyond the front held by the trade test",
			w0:   [2]float32{1.5, 0}, crit: "wd:0.3,0.0001", steps: "200",
			text: []string{
				"in the Pareto band (g ≤ e) at 100% of the last 100 steps", "improper trades (g ≤ e",
				"the target is beyond the Pareto front: q's target 0.0001 is out of reach, q cannot go lower without raising p by",
				"(PNG trades at most 10×); the closest point reached: p 1.653, q 0.01652",
				"a target the front can reach: q no lower than about 0.01652",
			},
			check: func(t *testing.T, ex map[string]any, _ tuneOutcome) {
				f := ex["front_limit"].(map[string]any)
				if f["beyond"] != true || f["loss"] != "q" || f["against"] != "p" || f["held_by"] != "improper_trades" {
					t.Fatalf("front_limit = %v, want q beyond the front against p, held by the trade test", f)
				}
				// where the trade test stops the run, the trade costs about
				// its limit: p rises s/(2−s) times what q falls at w = (s, 0)
				if r := f["ratio"].(float64); r < 9.5 || r > 11 {
					t.Errorf("ratio %v, want about 10", r)
				}
			},
		},
		{
			name: "a target beyond the front where F cancels",
			w0:   [2]float32{0.5, 0}, crit: "wd:0.1,0.1", steps: "100",
			text: []string{
				"the control was off at all 100 steps",
				"the target is beyond the Pareto front:", "cannot go lower without raising", "the closest point reached: p 0.50",
			},
			check: func(t *testing.T, ex map[string]any, _ tuneOutcome) {
				f := ex["front_limit"].(map[string]any)
				if f["beyond"] != true || f["held_by"] != "front" || math.Abs(f["target"].(float64)-0.1) > 1e-9 {
					t.Fatalf("front_limit = %v, want a target 0.1 beyond the front", f)
				}
				if r := f["ratio"].(float64); r < 0.95 || r > 1.05 {
					t.Errorf("ratio %v, want about 1 (the segment's middle)", r)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			model, data := pointModel(t, dir, tc.w0)
			args := []string{"tune", model, "--data", data, "--task", "p:mse:y:a", "--task", "q:mse:y:b", "--criterion", tc.crit,
				"--steps", tc.steps, "--lr", "0.01", "--out", filepath.Join(dir, "tuned.onnx"), "--force"}
			printed, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, printed)
			}
			for _, w := range tc.text {
				if !strings.Contains(printed, w) {
					t.Errorf("summary lacks %q:\n%s", w, printed)
				}
			}
			res := runTuneJSON(t, append(args, "--json")...)
			if res.Explanation == nil {
				t.Fatal("no explanation in --json")
			}
			// The text is the JSON's lines and suggestions.
			for _, l := range append(res.Explanation.Lines, res.Explanation.Try...) {
				if !strings.Contains(printed, l) {
					t.Errorf("summary lacks the JSON's line %q", l)
				}
			}
			printedJSON, err := runCLI(t, append(args, "--json")...)
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]any
			if err := json.Unmarshal([]byte(printedJSON[strings.Index(printedJSON, "{"):]), &raw); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"in_band_last100", "band_steps", "before", "after"} { // the fields before the explanation stay
				if _, ok := raw[k]; !ok {
					t.Errorf("--json lacks %q", k)
				}
			}
			tc.check(t, raw["explanation"].(map[string]any), res)
		})
	}
}

// TestTuneExplainsBound: the steps whose update Adam's step bound held,
// as the log reports them ("metric":{"clipped":k}), are the ones the
// summary, its --json and its one-line form count.
func TestTuneExplainsBound(t *testing.T) {
	dir := t.TempDir()
	// From w = (3, 0.01), F = p·q at lr 0.1: Adam's second weight has seen
	// small gradients, so PNG's correction would move it by more than
	// Adam can at some steps.
	model, data := pointModel(t, dir, [2]float32{3, 0.01})
	log := filepath.Join(dir, "tune.jsonl")
	args := []string{"tune", model, "--data", data, "--task", "p:mse:y:a", "--task", "q:mse:y:b", "--criterion", "p*q",
		"--steps", "30", "--lr", "0.1", "--out", filepath.Join(dir, "tuned.onnx"), "--log", log, "--force", "--json"}
	printed, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, printed)
	}
	var raw struct {
		Explanation job.Explanation `json:"explanation"`
	}
	if err := json.Unmarshal([]byte(printed[strings.Index(printed, "{"):]), &raw); err != nil {
		t.Fatal(err)
	}
	logBytes, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	held, posed, most, steps := 0, 0, 0, 0
	for _, l := range strings.Split(strings.TrimSpace(string(logBytes)), "\n") {
		var st struct {
			Step   int `json:"step"`
			Metric *struct {
				Clipped int `json:"clipped"`
			} `json:"metric"`
		}
		if err := json.Unmarshal([]byte(l), &st); err != nil {
			t.Fatal(err)
		}
		if st.Step == 0 {
			continue
		}
		steps++
		if st.Metric != nil {
			posed++
			if st.Metric.Clipped > 0 {
				held++
				most = max(most, st.Metric.Clipped)
			}
		}
	}
	if held == 0 {
		t.Fatalf("no step of the run was held by Adam's bound (%d posed of %d): the fixture no longer tests it", posed, steps)
	}
	b := raw.Explanation.Bound
	if b == nil || b.Held != held || b.Posed != posed || b.Steps != steps || b.MaxClipped != most {
		t.Fatalf("explanation's bound %+v, want the log's %d held of %d posed, %d steps, at most %d weights", b, held, posed, steps, most)
	}
	want := fmt.Sprintf("Adam's step bound held the update at %d of %d steps", held, steps)
	if !strings.Contains(strings.Join(raw.Explanation.Lines, "\n"), want) || !strings.Contains(raw.Explanation.Short, want) {
		t.Errorf("lines %q, short %q: want %q", raw.Explanation.Lines, raw.Explanation.Short, want)
	}
	text, err := runCLI(t, args[:len(args)-1]...)
	if err != nil || !strings.Contains(text, want) {
		t.Errorf("summary lacks %q (%v):\n%s", want, err, text)
	}
}
