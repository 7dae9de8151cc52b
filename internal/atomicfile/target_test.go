package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTarget: a plain path is its own target, a link (or a chain of
// links) names the file it ends at, and links into /dev or /proc, links
// to nothing and devices are refused.
func TestTarget(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := func(name, to string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := link("one", "file")
	two := link("two", one)
	cases := []struct {
		path, want, wantErr string
	}{
		{file, file, ""},
		{filepath.Join(dir, "new"), filepath.Join(dir, "new"), ""},
		{one, file, ""},
		{two, file, ""},
		{link("stdout", "/dev/stdout"), "", "a link into /dev or /proc"},
		{link("self", "/proc/self/fd/1"), "", "a link into /dev or /proc"},
		{link("hop", filepath.Join(dir, "stdout")), "", "a link into /dev or /proc"},
		{link("dangling", "missing"), "", "a link to a missing file"},
		{"/dev/null", "", "is a character device"},
		{"/dev/new-file", "", "system's device or process folder"},
		{dir, "", "is a folder"},
	}
	for _, c := range cases {
		got, err := Target(c.path)
		switch {
		case c.wantErr == "" && (err != nil || got != c.want):
			t.Errorf("Target(%s) = %q, %v; want %q", c.path, got, err, c.want)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("Target(%s) = %q, %v; want an error with %q", c.path, got, err, c.wantErr)
		}
	}
}

// TestWriteThroughLink: Write and Create replace the file a link names
// and leave the link a link; a link to /dev/stdout is refused and left.
func TestWriteThroughLink(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "real", "data.csv")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fill := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := Write(link, 0o644, fill("new")); err != nil {
		t.Fatal(err)
	}
	f, err := Create(link, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "newer")
	if err := f.Close(true); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced (%v, %v)", fi, err)
	}
	if b, _ := os.ReadFile(target); string(b) != "newer" {
		t.Errorf("target holds %q, want newer", b)
	}
	if got := entries(t, filepath.Join(dir, "real")); len(got) != 1 {
		t.Errorf("target's folder holds %q", got)
	}
	stdout := filepath.Join(dir, "stdout.png")
	if err := os.Symlink("/dev/stdout", stdout); err != nil {
		t.Fatal(err)
	}
	if err := Write(stdout, 0o644, fill("png")); !errors.Is(err, ErrSpecialLink) {
		t.Errorf("Write through /dev/stdout: %v, want ErrSpecialLink", err)
	}
	if _, err := Create(stdout, 0o644); !errors.Is(err, ErrSpecialLink) {
		t.Errorf("Create through /dev/stdout: %v, want ErrSpecialLink", err)
	}
	if l, err := os.Readlink(stdout); err != nil || l != "/dev/stdout" {
		t.Errorf("the link changed: %q, %v", l, err)
	}
}

// TestRemoveStale removes a killed write's temporary file of a target
// and leaves other files, other targets' temporaries and non-numeric
// suffixes alone.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "o.onnx")
	f, err := os.CreateTemp(dir, tempPattern(target))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	keep := []string{"o.onnx", ".o.onnx.tmpx", ".p.onnx.tmp123", ".o.onnx.tmp"}
	for _, k := range keep {
		if err := os.WriteFile(filepath.Join(dir, k), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	RemoveStale("", target)
	got := entries(t, dir)
	if len(got) != len(keep) {
		t.Errorf("folder holds %q, want %q", got, keep)
	}
	if _, err := os.Stat(f.Name()); err == nil {
		t.Errorf("%s was left", f.Name())
	}
}
