package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/paretonav/paretonav/finetune"
)

// TestTuneFlagErrors: a bad number or name given to tune is refused before
// the first step with a message that names the flag and what was
// expected, in the flag's words (no Go field names, no encoder errors, no
// function names), whether the flag comes before or after the model.
func TestTuneFlagErrors(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("config: other.yaml\nsteps: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := append([]string{"--data", data, "--steps", "1", "--batch", "4"}, lenetTasks...)
	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{"negative lr", []string{"--lr", "-1"}, "--lr -1: want a positive finite number"},
		{"lr underflows", []string{"--lr", "1e-400"}, `"1e-400" for flag -lr: too small for a float64 (it rounds to 0`},
		{"lr overflows", []string{"--lr", "1e400"}, `"1e400" for flag -lr: too large for a float64`},
		{"gamma nan", []string{"--gamma", "nan"}, `"nan" for flag -gamma: want a number, not NaN`},
		{"negative gamma", []string{"--gamma", "-0.1"}, "--gamma -0.1: want a positive finite number (γ > 0"},
		{"negative alpha", []string{"--alpha", "-1"}, "--alpha -1: want a positive finite number (α > 0"},
		{"infinite alpha", []string{"--alpha", "inf"}, `"inf" for flag -alpha: want a finite number`},
		{"momentum 1", []string{"--optimizer", "sgd", "--momentum", "1"}, "--momentum 1: want 0 ≤ μ < 1"},
		{"weight underflows", []string{"--method", "linear", "--weights", "1,1e-400"}, `--weights "1,1e-400": item 2 1e-400: too small`},
		{"energy without --models", []string{"--criterion", "energy"}, "--criterion: criterion: preset energy: energy is a multi-point criterion: it spreads several models over the front; use it with --models N (front or synth)"},
		{"config names config", []string{"--config", cfg}, `key "config": a configuration file cannot name another one`},
	}
	// An unknown key lists the flags a file may set: not --config.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("stpes: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runCLI(t, append([]string{"tune", model, "--config", bad}, base...)...)
	if err == nil || !strings.Contains(err.Error(), `key "stpes" is not a flag of "tune"; flags: `) {
		t.Errorf("unknown key: %v", err)
	} else if _, list, _ := strings.Cut(err.Error(), "flags: "); slices.Contains(strings.Split(list, ", "), "config") {
		t.Errorf("unknown key: the flags listed include config: %v", err)
	}
	for _, tc := range tests {
		if !slices.Contains(tc.flags, "--criterion") {
			tc.flags = append(tc.flags, "--criterion", "left+right")
		}
		for _, after := range []bool{false, true} {
			name := tc.name + " before the model"
			args := append(append([]string{"tune"}, tc.flags...), model)
			args = append(args, base...)
			if after {
				name = tc.name + " after the model"
				args = append(append([]string{"tune", model}, base...), tc.flags...)
			}
			t.Run(name, func(t *testing.T) {
				rec := &atStep{}
				withTuneRecorder(t, rec)
				out, err := runCLI(t, append(slices.Clone(args), "--out", filepath.Join(t.TempDir(), "o.onnx"))...)
				// The flag package writes -lr, flags after the model --lr.
				if err == nil || !strings.Contains(strings.Replace(err.Error(), "flag --", "flag -", 1), tc.want) {
					t.Fatalf("err = %v, want one containing %q\n%s", err, tc.want, out)
				}
				for _, bad := range []string{"Settings.", "json:", "ParseMulti", "finetune:", "png:"} {
					if strings.Contains(err.Error(), bad) {
						t.Errorf("error names %q: %v", bad, err)
					}
				}
				if rec.steps != 0 {
					t.Errorf("%d steps ran", rec.steps)
				}
			})
		}
	}
}

// signalAt is a Recorder that sends this process sig after step n.
type signalAt struct {
	n     int
	sig   syscall.Signal
	steps int
}

func (s *signalAt) Init(*finetune.Config) error { return nil }
func (s *signalAt) Record(st *finetune.Step) error {
	s.steps++
	if st.Step == s.n {
		return syscall.Kill(os.Getpid(), s.sig)
	}
	return nil
}
func (s *signalAt) Done(*finetune.Result) error { return nil }

// TestTuneInterruptedMessage: a tune stopped by a real SIGINT or SIGTERM
// says so in words (what stopped it, after which step, where its
// checkpoint is and how to continue), not as a context error, and exits
// with 130.
func TestTuneInterruptedMessage(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	for _, tc := range []struct {
		sig syscall.Signal
		by  string
	}{{syscall.SIGINT, "an interrupt (SIGINT, Ctrl-C)"}, {syscall.SIGTERM, "a termination request (SIGTERM)"}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "o.onnx")
			rec := &signalAt{n: 2, sig: tc.sig}
			withTuneRecorder(t, rec)
			printed, err := runCLI(t, append([]string{"tune", model, "--data", data, "--criterion", "left+right", "--steps", "100000", "--batch", "4", "--out", out}, lenetTasks...)...)
			if err == nil {
				t.Fatalf("not interrupted\n%s", printed)
			}
			want := "tune interrupted by " + tc.by + " after step "
			ckpt := "; checkpoint " + out + ".ckpt (continue with `paretonav tune --resume " + out + ".ckpt`)"
			if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), ckpt) {
				t.Errorf("err = %q, want %q…%q", err, want, ckpt)
			}
			for _, bad := range []string{"context canceled", "finetune:", "signal received"} {
				if strings.Contains(err.Error(), bad) {
					t.Errorf("error says %q: %v", bad, err)
				}
			}
			if code := ExitCode(err); code != 130 {
				t.Errorf("exit code %d, want 130", code)
			}
			if _, serr := os.Stat(out + ".ckpt"); serr != nil {
				t.Errorf("no checkpoint: %v", serr)
			}
		})
	}
}

// TestFrontSynthFlagErrors: front and synth refuse the same numbers as
// tune, in the flag's words, before the first step.
func TestFrontSynthFlagErrors(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	front := append([]string{"front", model, "--data", data, "--models", "2", "--steps", "2", "--batch", "4", "--out-dir", filepath.Join(dir, "f")}, lenetTasks...)
	synth := []string{"synth", "--problem", "zdt2v", "--steps", "2"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"front negative alpha", append(slices.Clone(front), "--alpha", "-2"), "--alpha -2: want a positive finite number (α > 0"},
		{"front negative gamma", append(slices.Clone(front), "--gamma", "-1"), "--gamma -1: want a positive finite number (γ > 0"},
		{"front negative lr", append(slices.Clone(front), "--lr", "-0.1"), "--lr -0.1: want a positive finite number"},
		{"front momentum", append(slices.Clone(front), "--optimizer", "sgd", "--momentum", "-0.5"), "--momentum -0.5: want 0 ≤ μ < 1"},
		{"front lr underflows", append(slices.Clone(front), "--lr", "1e-999"), `"1e-999" for flag -lr: too small for a float64`},
		{"synth negative lr", append(slices.Clone(synth), "--lr", "-1"), "--lr -1: want a positive finite number"},
		{"synth negative alpha", append(slices.Clone(synth), "--alpha", "-1"), "--alpha -1: want a positive finite number"},
		{"synth gamma nan", append(slices.Clone(synth), "--gamma", "NaN"), `"NaN" for flag -gamma: want a number, not NaN`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &atStep{}
			frontTestRecorder = rec
			t.Cleanup(func() { frontTestRecorder = nil })
			out, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(strings.Replace(err.Error(), "flag --", "flag -", 1), tc.want) {
				t.Fatalf("err = %v, want one containing %q\n%s", err, tc.want, out)
			}
			if rec.steps != 0 {
				t.Errorf("%d front steps ran before the error", rec.steps)
			}
		})
	}
}
