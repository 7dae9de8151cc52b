package cli_test

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/models"
	"github.com/paretonav/paretonav/models/synthetic"
)

// TestFrontEPOExp2: front --method epo trains model k toward its own
// preference ray; every model ends on the front with r1ℓ1 = r2ℓ2.
func TestFrontEPOExp2(t *testing.T) {
	for _, tc := range []struct {
		pref  string
		rays  [][2]float64
		label string
	}{
		{"", [][2]float64{{0.1, 0.9}, {0.3, 0.7}, {0.5, 0.5}, {0.7, 0.3}, {0.9, 0.1}}, "epo 0.1,0.9;0.3,0.7;0.5,0.5;0.7,0.3;0.9,0.1"},
		{"1,3;2,1", [][2]float64{{1, 3}, {2, 1}}, "epo 1,3;2,1"},
	} {
		t.Run(tc.label, func(t *testing.T) {
			args := []string{"--problem", "exp2", "--method", "epo", "--models", string(rune('0' + len(tc.rays))), "--out-dir", t.TempDir()}
			if tc.pref != "" {
				args = append(args, "--preference", tc.pref)
			}
			out, err := runCLI(t, append([]string{"front", "--json"}, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				frontReport
				Criterion string `json:"criterion"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Models) != len(tc.rays) || r.Criterion != tc.label {
				t.Fatalf("%d models trained by %q, want %d by %q", len(r.Models), r.Criterion, len(tc.rays), tc.label)
			}
			exp2, _ := synthetic.New("exp2")
			for k, m := range r.Models {
				l := [2]float64{m.Losses["l1"], m.Losses["l2"]}
				if d := tc.rays[k][0]*l[0] - tc.rays[k][1]*l[1]; math.Abs(d) > lossTol {
					t.Errorf("model %d (r = %v): r1ℓ1 − r2ℓ2 = %.3g at %v, want within %g", k, tc.rays[k], d, l, lossTol)
				}
				if d := exp2.FrontDistance(l); d > lossTol {
					t.Errorf("model %d at %v is %g from the front", k, l, d)
				}
			}
		})
	}
}

// TestEPOOnnx: tune and front run EPO end to end on LeNet2; the JSON-lines
// log records the method, the preference and every step's EPO mode.
func TestEPOOnnx(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "lenet2.onnx")
	if err := models.WriteModel(model, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	train := filepath.Join(dir, "train.npz")
	tinyMultiMNIST(t, train, 32, 1)

	log := filepath.Join(dir, "tune.jsonl")
	args := append([]string{"tune", model, "--data", train, "--method", "epo", "--preference", "1,2", "--steps", "3", "--batch", "16",
		"--out", filepath.Join(dir, "tuned.onnx"), "--log", log}, lenetTaskArgs...)
	if out, err := runCLI(t, args...); err != nil {
		t.Fatalf("tune --method epo: %v\n%s", err, out)
	}
	lines := readJSONL(t, log)
	if len(lines) < 4 || lines[0]["method"] != "epo" || !strings.Contains(mustJSON(lines[0]["preference"]), "[[1,2]]") {
		t.Fatalf("log config %v, want method epo with preference [[1,2]] and 3 steps", lines[0])
	}
	for _, l := range lines[1:4] {
		e, ok := l["epo"].(map[string]any)
		if !ok || (e["mode"] != "balance" && e["mode"] != "descent" && e["mode"] != "descent-relaxed") || len(e["beta"].([]any)) != 2 {
			t.Errorf("step line %v: want an epo record with a mode and two weights β", l)
		}
	}

	fr := runFrontJSON(t, append([]string{model, "--data", train, "--method", "epo", "--models", "2", "--steps", "2", "--batch", "16",
		"--out-dir", filepath.Join(dir, "front")}, lenetTaskArgs...)...)
	if len(fr.Models) != 2 || fr.Steps != 2 {
		t.Fatalf("front --method epo: %d models after %d steps, want 2 after 2", len(fr.Models), fr.Steps)
	}
	for k, m := range fr.Models {
		if _, err := os.Stat(m.File); err != nil {
			t.Errorf("model %d: %v", k, err)
		}
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--method", "epo", "--preference", "1,2;3"}, "model 1 has 1 weights"},
		{[]string{"--method", "epo", "--preference", "1,2"}, "1 preference vectors, want one per model (2)"},
		{[]string{"--method", "mgd"}, "front trains with png or epo"},
		{[]string{"--preference", "1,2;3,4"}, "only with --method epo"},
	} {
		_, err := runCLI(t, append(append([]string{"front", model, "--data", train, "--models", "2", "--steps", "1",
			"--out-dir", filepath.Join(dir, "bad")}, lenetTaskArgs...), bad.args...)...)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("front %v: error %v, want one mentioning %q", bad.args, err, bad.want)
		}
	}
}

// readJSONL decodes every line of the JSON-lines file at path.
func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
