package job

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/png"
)

func TestParseTasks(t *testing.T) {
	for _, tc := range []struct {
		specs []string
		names []string
		err   string
	}{
		{specs: []string{"left:ce:out_l:yl", "right:ce:out_r:yr"}, names: []string{"left", "right"}},
		{specs: nil, err: "--task: at least one task"},
		{specs: []string{"a:ce:o:y", "a:mse:p:z"}, err: `task name "a" used twice`},
		{specs: []string{"a:nosuchloss:o:y"}, err: "--task:"},
	} {
		got, err := ParseTasks(tc.specs)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseTasks(%q): error %v, want one containing %q", tc.specs, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ParseTasks(%q): %v", tc.specs, err)
		}
		var names []string
		for _, tk := range got {
			names = append(names, tk.Name)
		}
		if strings.Join(names, ",") != strings.Join(tc.names, ",") {
			t.Errorf("ParseTasks(%q): tasks %v, want %v", tc.specs, names, tc.names)
		}
	}
}

func TestParseMaps(t *testing.T) {
	for _, tc := range []struct {
		specs []string
		want  map[string]string
		err   string
	}{
		{specs: []string{"x=images", " y = labels "}, want: map[string]string{"x": "images", "y": "labels"}},
		{specs: []string{"x"}, err: `--map "x": want input=array`},
		{specs: []string{"x=a", "x=b"}, err: `input "x" mapped twice`},
	} {
		got, err := ParseMaps(tc.specs)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseMaps(%q): error %v, want one containing %q", tc.specs, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("ParseMaps(%q) = %v, %v; want %v", tc.specs, got, err, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("ParseMaps(%q)[%q] = %q, want %q", tc.specs, k, got[k], v)
			}
		}
	}
}

func TestMethodConfigBuild(t *testing.T) {
	tasks := []string{"a", "b"}
	for _, tc := range []struct {
		mc   MethodConfig
		want string
		err  string
	}{
		{mc: MethodConfig{Name: "png", Alpha: 0.5, Gamma: 0.2}, want: "png.PNG"},
		{mc: MethodConfig{Name: "mgd"}, want: "png.MGD"},
		{mc: MethodConfig{Name: "linear", Weights: "1,3"}, want: "png.Linear"},
		{mc: MethodConfig{Name: "linear", Weights: "1"}, err: "1 weights, want one per task (a, b)"},
		{mc: MethodConfig{Name: "linear", Weights: "1,x"}, err: `item 2 ("x") is not a number`},
		{mc: MethodConfig{Name: "epo", Preference: "1,3"}, want: "png.EPO"},
		{mc: MethodConfig{Name: "epo"}, want: "png.EPO"},
		{mc: MethodConfig{Name: "epo", Preference: "1,2,3"}, err: "3 weights, want one per task (a, b)"},
		{mc: MethodConfig{Name: "epo", Preference: "1,0"}, err: "item 2 (0) must be a positive finite number"},
		{mc: MethodConfig{Name: "sgd"}, err: `--method "sgd": want png, mgd, linear or epo`},
		{mc: MethodConfig{Name: "png", Alpha: 0.5, Gamma: 0.2, MGDSteps: 150}, want: "png.Staged"},
		{mc: MethodConfig{Name: "png", MGDSteps: -1}, err: "--mgd-steps -1: want 0 or more"},
		{mc: MethodConfig{Name: "mgd", MGDSteps: 5}, err: "already follows MGD"},
		{mc: MethodConfig{Name: "sgd", MGDSteps: 5}, err: `--method "sgd"`},
	} {
		m, err := tc.mc.Build(tasks)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: error %v, want one containing %q", tc.mc, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc.mc, err)
		}
		switch x := m.(type) {
		case png.PNG:
			if tc.want != "png.PNG" || x.Settings.Alpha != 0.5 || x.Settings.Gamma != 0.2 {
				t.Errorf("%+v: got %#v", tc.mc, x)
			}
		case png.MGD:
			if tc.want != "png.MGD" {
				t.Errorf("%+v: got %#v", tc.mc, x)
			}
		case png.Linear:
			if tc.want != "png.Linear" || len(x.Weights) != 2 || x.Weights[1] != 3 {
				t.Errorf("%+v: got %#v", tc.mc, x)
			}
		case png.EPO:
			if tc.want != "png.EPO" || (tc.mc.Preference == "" && x.Preference != nil) || (tc.mc.Preference != "" && (len(x.Preference) != 2 || x.Preference[1] != 3)) {
				t.Errorf("%+v: got %#v", tc.mc, x)
			}
		case png.Staged:
			p, ok := x.Then.(png.PNG)
			if _, mgd := x.First.(png.MGD); tc.want != "png.Staged" || !mgd || !ok || x.Steps != tc.mc.MGDSteps || p.Settings.Alpha != 0.5 {
				t.Errorf("%+v: got %#v", tc.mc, x)
			}
		default:
			t.Errorf("%+v: got %T", tc.mc, m)
		}
	}
}

// TestInBand checks that the band share counts g ≤ e, whatever the
// control did: a step in the band with the control on (an improper trade)
// counts, one outside it does not.
func TestInBand(t *testing.T) {
	for _, tc := range []struct {
		name string
		g, e []float64
		k    int
		frac float64
		n    int
	}{
		{name: "empty", k: 100},
		{name: "half", g: []float64{2, 2, 1, 1}, e: []float64{1, 1, 1, 1}, k: 100, frac: 0.5, n: 4},
		{name: "last two in", g: []float64{2, 2, 0.5, 1}, e: []float64{1, 1, 1, 1}, k: 2, frac: 1, n: 2},
		{name: "last two out", g: []float64{0, 3, 3}, e: []float64{1, 1, 1}, k: 2, frac: 0, n: 2},
		// the run: g far below e at every step, the control on
		// throughout (improper trades): all in the band
		{name: "in band, control on", g: []float64{0.01, 0.02, 0.01}, e: []float64{0.78, 0.78, 0.78}, k: 100, frac: 1, n: 3},
	} {
		frac, n := InBand(tc.g, tc.e, tc.k)
		if float64(frac) != tc.frac || n != tc.n {
			t.Errorf("%s: InBand(%v, %v, %d) = %v, %d; want %v, %d", tc.name, tc.g, tc.e, tc.k, frac, n, tc.frac, tc.n)
		}
	}
}

func TestNumJSON(t *testing.T) {
	b, err := json.Marshal([]Num{1.5, Num(math.NaN()), Num(math.Inf(-1))})
	if err != nil || string(b) != "[1.5,null,null]" {
		t.Errorf("got %s, %v; want [1.5,null,null]", b, err)
	}
}

func TestPreferences(t *testing.T) {
	two := []string{"a", "b"}
	for _, tc := range []struct {
		spec  string
		N     int
		tasks []string
		want  string // fmt of the result
		err   string
	}{
		{"", 5, two, "[[0.1 0.9] [0.3 0.7] [0.5 0.5] [0.7 0.30000000000000004] [0.9 0.09999999999999998]]", ""},
		{"", 2, two, "[[0.25 0.75] [0.75 0.25]]", ""},
		{"1,2; 3,4", 2, two, "[[1 2] [3 4]]", ""},
		{"", 2, []string{"a", "b", "c"}, "", "default preferences are for 2 tasks"},
		{"1,2", 2, two, "", "1 preference vectors, want one per model (2)"},
		{"1,2;3", 2, two, "", "model 1 has 1 weights"},
		{"1,2;3,-4", 2, two, "", "model 1, item 2 (-4) must be a positive"},
		{"1,2;3,x", 2, two, "", `item 2 ("x") is not a number`},
	} {
		got, err := ParsePreferences("--preference", tc.spec, tc.N, tc.tasks)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("%q, N %d: %v, %v; want %s", tc.spec, tc.N, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		mc   MethodConfig
		m    int
		want string
	}{{MethodConfig{Name: "epo"}, 3, "ratio:1,1,1"}, {MethodConfig{Name: "epo", Preference: "1,4"}, 2, "ratio:1,4"}} {
		if got := tc.mc.EPOCriterion(tc.m); got != tc.want {
			t.Errorf("%+v.EPOCriterion(%d) = %q, want %q", tc.mc, tc.m, got, tc.want)
		}
	}
}

// TestParseFloat: float text that float64 cannot hold is refused with
// the flag's name, never read as 0, ±Inf or NaN.
func TestParseFloat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  string
	}{
		{"0.5", 0.5, ""},
		{"0", 0, ""},
		{"-0.0e-5", 0, ""},
		{"0x0p-3", 0, ""},
		{"1e-300", 1e-300, ""},
		{"1e-400", 0, "--lr 1e-400: too small for a float64 (it rounds to 0"},
		{"-4e-999", 0, "--lr -4e-999: too small"},
		{"0x1p-2000", 0, "--lr 0x1p-2000: too small"},
		{"1e400", 0, "--lr 1e400: too large for a float64"},
		{"nan", 0, "--lr nan: want a number, not NaN"},
		{"-Inf", 0, "--lr -Inf: want a finite number"},
		{"x", 0, `--lr "x": want a number`},
	} {
		got, err := ParseFloat("--lr", tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseFloat(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseFloat(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.err)
		}
	}
	if _, err := ParseFloats("--weights", "1,1e-400"); err == nil || !strings.Contains(err.Error(), `--weights "1,1e-400": item 2 1e-400: too small`) {
		t.Errorf("ParseFloats: %v", err)
	}
}

// TestCheckPNG: PNG's α and γ are refused outside the paper's range
// (positive, finite) before a run starts; 0 stands for the default.
func TestCheckPNG(t *testing.T) {
	for _, tc := range []struct {
		mc  MethodConfig
		err string
	}{
		{MethodConfig{Name: "png"}, ""},
		{MethodConfig{Name: "png", Alpha: 2, Gamma: 0.01}, ""},
		{MethodConfig{Name: "png", Alpha: -1}, "--alpha -1: want a positive finite number (α > 0"},
		{MethodConfig{Name: "png", Gamma: -0.5}, "--gamma -0.5: want a positive finite number (γ > 0"},
		{MethodConfig{Name: "png", Gamma: math.NaN()}, "--gamma NaN: want a positive finite number"},
		{MethodConfig{Name: "png", Alpha: math.Inf(1), MGDSteps: 3}, "--alpha +Inf: want a positive finite number"},
	} {
		_, err := tc.mc.Build([]string{"a", "b"})
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%+v: err %v, want %q", tc.mc, err, tc.err)
		}
	}
}
