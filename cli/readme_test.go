package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pythonWith returns a python3 that imports every module named, skipping
// the test when there is none except under CI=true (CI installs them).
func pythonWith(t *testing.T, modules ...string) string {
	t.Helper()
	imports := "import " + strings.Join(modules, ", ")
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", imports).Run() == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: no python3 with %s (apt-get install python3-torch python3-onnx)", strings.Join(modules, ", "))
	}
	t.Skipf("no python3 with %s", strings.Join(modules, ", "))
	return ""
}

// TestReadmeCommandLine runs the README's "From the command line" section
// as a reader would, in one empty folder: the Python snippet that exports
// the model and writes the data, every paretonav command line after it,
// then the snippet that loads the tuned weights back, which must find
// every parameter and read the tuned values.
func TestReadmeCommandLine(t *testing.T) {
	py := pythonWith(t, "torch", "onnx", "numpy")
	raw, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(raw)
	i := strings.Index(section, "### From the command line")
	if i < 0 {
		t.Fatal(`README.md has no "### From the command line" section`)
	}
	section = section[i:]
	if j := strings.Index(section, "\n### Losses"); j >= 0 {
		section = section[:j]
	}
	var python []string
	commands := 0
	dir := t.TempDir()
	t.Chdir(dir)
	runPython := func(name, code string) {
		t.Helper()
		script := filepath.Join(dir, name)
		if err := os.WriteFile(script, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(py, script).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s\n%s", name, err, code, out)
		}
	}
	for _, m := range fence.FindAllStringSubmatch(section, -1) {
		lang, text := m[1], m[2]
		switch lang {
		case "python":
			python = append(python, text)
			if len(python) == 1 {
				runPython("export.py", text)
			}
		case "":
			for _, line := range strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n") {
				if k := strings.Index(line, "#"); k >= 0 {
					line = line[:k]
				}
				line = strings.TrimSpace(line)
				if !strings.HasPrefix(line, "paretonav ") {
					continue
				}
				commands++
				if out, err := runCLI(t, shellWords(line)[1:]...); err != nil {
					t.Fatalf("%s: %v\n%s", line, err, out)
				}
			}
		}
	}
	if len(python) != 2 || commands != 3 {
		t.Fatalf("found %d Python snippets and %d command lines; the section has 2 and 3", len(python), commands)
	}
	// The loader runs after the export snippet in one Python process, as a reader
	// would (which exports model.onnx again); it must load the tuned file's
	// values, and they must differ from the model that was tuned.
	tuned, err := os.ReadFile("model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("pretrained.onnx", tuned, 0o644); err != nil {
		t.Fatal(err)
	}
	runPython("load.py", python[0]+"\n"+python[1]+`
import numpy as np
after = model.state_dict()
for name, value in tuned.items():
    if name in after:
        assert np.array_equal(after[name].numpy(), value.numpy()), name
assert any(not np.array_equal(tuned[k].numpy(), v.numpy()) for k, v in
           {t.name: torch.from_numpy(onnx.numpy_helper.to_array(t).copy())
            for t in onnx.load("pretrained.onnx").graph.initializer}.items() if k in tuned), "tuning changed nothing"
`)
}
