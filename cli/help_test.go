package cli_test

import (
	"regexp"
	"strings"
	"testing"
)

// helpFlagLine matches a flag's line in --help: name, placeholder, usage.
var helpFlagLine = regexp.MustCompile(`^\s+--([a-z-]+) (\S+)(?: \[ --\S+ \S+ \])?\s{2,}(.*)$`)

// helpFlags returns each flag's placeholder and usage in cmd's --help.
func helpFlags(t *testing.T, cmd string) map[string][2]string {
	t.Helper()
	out, err := runCLI(t, cmd, "--help")
	if err != nil {
		t.Fatalf("%s --help: %v", cmd, err)
	}
	flags := map[string][2]string{}
	for _, line := range strings.Split(out, "\n") {
		if m := helpFlagLine.FindStringSubmatch(line); m != nil {
			flags[m[1]] = [2]string{m[2], m[3]}
		}
	}
	if len(flags) < 10 {
		t.Fatalf("%s --help: found %d flag lines:\n%s", cmd, len(flags), out)
	}
	return flags
}

// TestHelpReadsOnce: no usage repeats its placeholder as a label
// ("--weights w1,w2,...  w1,w2,...: ..."), a flag whose default differs
// between settings shows one default text, and placeholders name what they
// stand for instead of looking like a value.
func TestHelpReadsOnce(t *testing.T) {
	for _, cmd := range []string{"tune", "front"} {
		flags := helpFlags(t, cmd)
		for name, f := range flags {
			ph, usage := f[0], f[1]
			if strings.HasPrefix(usage, ph) || strings.HasPrefix(usage, name+" "+ph) {
				t.Errorf("%s --help: --%s %s: usage %q starts with the placeholder", cmd, name, ph, usage)
			}
			if strings.Count(usage, "(default") > 1 {
				t.Errorf("%s --help: --%s: usage %q gives more than one default", cmd, name, usage)
			}
		}
		for name, want := range map[string]string{"optimizer": "NAME", "lr-schedule": "SCHEDULE", "bn": "MODE", "criterion": "SPEC", "weights": "W1,W2,...", "task": "SPEC"} {
			if cmd == "front" && name == "weights" {
				continue
			}
			if got := flags[name][0]; got != want {
				t.Errorf("%s --help: --%s placeholder %q, want %q", cmd, name, got, want)
			}
		}
	}
	front := helpFlags(t, "front")
	for name, want := range map[string]string{
		"gamma": "(default: 0.1; 0.01 with --problem)",
		"steps": "(default: 1000; 10000 with --problem; --epochs passes when that is set)",
		"ref":   "(default: 0.6, the paper's for trained MultiMNIST models; 1.1 with --problem)",
	} {
		if !strings.HasSuffix(front[name][1], want) {
			t.Errorf("front --help: --%s %q, want it to end %q", name, front[name][1], want)
		}
	}
	tune := helpFlags(t, "tune")
	if want := "(default: 1000, or --epochs passes when that is set)"; !strings.HasSuffix(tune["steps"][1], want) {
		t.Errorf("tune --help: --steps %q, want it to end %q", tune["steps"][1], want)
	}
	if p := tune["plot"][1]; !strings.Contains(p, "task losses") || !strings.Contains(p, "loss space") || !strings.Contains(p, "g and e") {
		t.Errorf("tune --help: --plot %q, want it to name F, g and e, the task losses and the loss-space trajectory", p)
	}
}
