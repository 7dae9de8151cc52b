package cli

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend"
)

// TestLossesCommand checks that paretonav losses lists every loss kind of
// backend's registry, as text and as JSON (the Python package reads the
// JSON), with its target, options and metrics.
func TestLossesCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{{"text", []string{"losses"}}, {"json", []string{"losses", "--json"}}} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tc.args, err, out)
			}
			if tc.name == "text" {
				for _, k := range backend.Losses() {
					if !strings.Contains(out, k.Name+": "+k.Summary+"\n    target: "+k.Target+"\n") {
						t.Errorf("kind %s missing from:\n%s", k.Name, out)
					}
				}
				if !strings.Contains(out, "option ignore_index=N (default -100)") || !strings.Contains(out, "metrics: abs_err, rel_err") {
					t.Errorf("options or metrics missing:\n%s", out)
				}
				return
			}
			var got struct {
				Losses []backend.LossKind `json:"losses"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var names []string
			for _, k := range got.Losses {
				names = append(names, k.Name)
				if k.Summary == "" || k.Target == "" || k.Options == nil {
					t.Errorf("kind %s: a field is missing: %+v", k.Name, k)
				}
			}
			if !slices.Equal(names, backend.LossKinds()) {
				t.Fatalf("kinds %v, want %v", names, backend.LossKinds())
			}
			if _, err := runCLI(t, "losses", "extra"); err == nil {
				t.Error("an argument was accepted")
			}
		})
	}
}

// TestLossTablesListEveryKind checks that the loss tables of the README
// and docs/data.md, which explain each kind at length, list exactly the
// kinds of backend's registry.
func TestLossTablesListEveryKind(t *testing.T) {
	for _, path := range []string{"../README.md", "../docs/data.md"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		in := false
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "| loss |"):
				in = true
			case in && !strings.HasPrefix(line, "|"):
				in = false
			case in && strings.HasPrefix(line, "| `"):
				name, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
				names = append(names, name)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, backend.LossKinds()) {
			t.Errorf("%s: the loss table lists %v, the registry %v", path, names, backend.LossKinds())
		}
	}
}
