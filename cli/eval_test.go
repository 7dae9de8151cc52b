package cli

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/format/npz"
)

// TestEvalFixture checks eval's losses and --grad-out against the
// PyTorch fixture's float64 losses and gradients, with flags given after
// the model argument, and that --batch and --limit average as documented.
func TestEvalFixture(t *testing.T) {
	dir := t.TempDir()
	fx, data, taskArgs := torchFixture(t, "lenet2_op13", dir, "d.npz", "x")
	const (
		lossTol = 1e-6
		gradTol = 1e-6
	)
	tests := []struct {
		name  string
		args  []string
		whole bool // evaluates all examples (compare with the fixture)
	}{
		{"one batch", []string{"--batch", "256"}, true},
		{"batches of 3 and 1", []string{"--batch", "3"}, true},
		{"first 2 examples", []string{"--batch", "1", "--limit", "2"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := filepath.Join(t.TempDir(), "g.npz")
			args := append(append([]string{"eval", fx.ModelPath, "--data", data, "--json", "--grad-out", g}, taskArgs...), tc.args...)
			out, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var ev evalJSON
			if err := json.Unmarshal([]byte(out), &ev); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !tc.whole {
				if ev.Examples != 2 {
					t.Errorf("examples %d, want 2", ev.Examples)
				}
				return
			}
			if ev.Examples != fx.Input.Shape[0] || !(ev.G > 0) {
				t.Errorf("examples %d, g %v", ev.Examples, ev.G)
			}
			for task, want := range fx.Losses {
				if got := float64(ev.Tasks[task]); math.Abs(got-want) > lossTol {
					t.Errorf("loss %s = %v, fixture %v", task, got, want)
				}
			}
			grads, err := npz.Read(g)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for task, byInit := range fx.Grads {
				for init, want := range byInit {
					got := grads[task+"/"+init]
					if got == nil {
						t.Errorf("--grad-out lacks %s/%s", task, init)
						continue
					}
					n++
					w := want.Float64s()
					for i, v := range got.Float64s() {
						if math.Abs(v-w[i]) > gradTol {
							t.Errorf("%s/%s[%d] = %v, fixture %v", task, init, i, v, w[i])
							break
						}
					}
				}
			}
			if n != len(grads) || n == 0 {
				t.Errorf("--grad-out has %d arrays, the fixture %d", len(grads), n)
			}
		})
	}
}

func TestEvalFlags(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	tests := []struct {
		name   string
		args   []string
		needle string
	}{
		{"no data", append([]string{"eval", model}, lenetTasks...), "--data"},
		{"no task", []string{"eval", model, "--data", data}, "--task"},
		{"bad task", []string{"eval", model, "--data", data, "--task", "left:nope:logp_left:left"}, `unknown loss "nope"`},
		{"unknown output", []string{"eval", model, "--data", data, "--task", "left:nll:logits:left"}, `no output "logits"`},
		{"two models", append([]string{"eval", model, model, "--data", data}, lenetTasks...), "one MODEL.onnx"},
		{"bad bn", append([]string{"eval", model, "--data", data, "--bn", "eval"}, lenetTasks...), "--bn"},
		{"bad map", append([]string{"eval", model, "--data", data, "--map", "x"}, lenetTasks...), "input=array"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.needle) {
				t.Errorf("err = %v, want one containing %q\n%s", err, tc.needle, out)
			}
		})
	}
}

// TestEvalMaxMemory checks that eval stops before any step when the
// expected peak is over --max-memory, naming the flag and the batch, and
// prints the expected peak when it fits, with --verbose only.
func TestEvalMaxMemory(t *testing.T) {
	dir := t.TempDir()
	fx, data, taskArgs := torchFixture(t, "lenet2_op13", dir, "d.npz", "x")
	args := append([]string{"eval", fx.ModelPath, "--data", data, "--batch", "4", "--max-memory", "1MB"}, taskArgs...)
	out, err := runCLI(t, args...)
	if err == nil || !strings.Contains(err.Error(), "--max-memory") || !strings.Contains(err.Error(), "--batch 4 needs about") {
		t.Fatalf("error %v, expected --batch 4 over --max-memory\n%s", err, out)
	}
	if strings.Contains(out, " on 4 examples") {
		t.Errorf("eval ran despite the limit:\n%s", out)
	}
	args = append([]string{"eval", fx.ModelPath, "--data", data, "--batch", "4", "--max-memory", "8GB"}, taskArgs...)
	out, err = runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(out, "expected peak memory") {
		t.Errorf("the memory plan printed without --verbose:\n%s", out)
	}
	// --verbose, after the command or before it (global), prints the plan.
	for _, v := range [][]string{append(args, "--verbose"), append([]string{"-v"}, args...)} {
		out, err = runCLI(t, v...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.Contains(out, "expected peak memory") || !strings.Contains(out, "limit 8.0 GB (--max-memory)") {
			t.Errorf("%v: no expected peak line:\n%s", v, out)
		}
	}
}
