package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fence matches a fenced block of docs/data.md: its language and text.
var fence = regexp.MustCompile("(?s)```(\\w*)\\n(.*?)```")

// pythonWithNumpy returns a python3 that imports numpy, skipping the test
// when there is none except under CI=true (CI installs python3-numpy).
func pythonWithNumpy(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import numpy").Run() == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true: no python3 with numpy (apt-get install python3-numpy)")
	}
	t.Skip("no python3 with numpy")
	return ""
}

// shellWords splits a command line on spaces, keeping single-quoted text
// together (what the docs' command lines use).
func shellWords(line string) []string {
	var out []string
	var cur strings.Builder
	quoted, has := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, has = !quoted, true
		case r == ' ' && !quoted:
			if has {
				out = append(out, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteRune(r)
			has = true
		}
	}
	if has {
		out = append(out, cur.String())
	}
	return out
}

// TestDataDocExamples runs docs/data.md as a reader would, in one empty
// folder: every python snippet (writing the NPZ files), then every
// paretonav command line of the blocks after it.
func TestDataDocExamples(t *testing.T) {
	py := pythonWithNumpy(t)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "data.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	snippets, commands := 0, 0
	for _, m := range fence.FindAllStringSubmatch(string(doc), -1) {
		lang, text := m[1], m[2]
		if lang == "python" {
			snippets++
			script := filepath.Join(dir, "snippet.py")
			if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(py, script).CombinedOutput(); err != nil {
				t.Fatalf("snippet %d: %v\n%s\n%s", snippets, err, text, out)
			}
			continue
		}
		for _, line := range strings.Split(text, "\n") {
			if !strings.HasPrefix(line, "paretonav ") {
				continue
			}
			commands++
			out, err := runCLI(t, shellWords(line)[1:]...)
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
			if strings.Contains(out, "converted to") {
				t.Errorf("%s: the example's arrays are not of the types the doc says:\n%s", line, out)
			}
		}
	}
	if snippets != 3 || commands != 6 {
		t.Errorf("ran %d snippets and %d command lines; the doc has 3 and 6", snippets, commands)
	}
}
