package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsUpToDate: docs/cli.md and docs/paretonav.1 are what the docs
// command writes from the application now, so the reference cannot drift
// from the flags.
func TestDocsUpToDate(t *testing.T) {
	dir := t.TempDir()
	if err := writeReference(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cli.md", "paretonav.1"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("..", "docs", name))
		if err != nil || string(got) != string(want) {
			t.Errorf("docs/%s is stale (%v): regenerate it with %q at the repository's root", name, err, docsRegenerate)
		}
	}
	md := ReferenceMarkdown()
	for _, want := range []string{"## paretonav tune", "- `--alpha α`: PNG's α", "### Training", "```\nparetonav tune [OPTIONS] MODEL.onnx\n```"} {
		if !strings.Contains(md, want) {
			t.Errorf("cli.md lacks %q", want)
		}
	}
	if strings.Contains(md, "paretonav docs") {
		t.Error("cli.md lists the hidden docs command")
	}
}

// TestDocsAfterRuns: running commands (which makes urfave/cli add its help
// subcommands and flags to the shared command values) leaves the
// reference as it was.
func TestDocsAfterRuns(t *testing.T) {
	before := ReferenceMarkdown()
	for _, args := range [][]string{{"batch", "--help"}, {"tune", "--help"}, {"models", "lenet2", "--help"}} {
		if out, err := runCLI(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	if after := ReferenceMarkdown(); after != before {
		t.Error("the reference changed after commands ran (urfave/cli's help commands or flags leaked in)")
	}
}
