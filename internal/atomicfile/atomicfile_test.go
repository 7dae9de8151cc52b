package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// entries lists dir's file names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteReplacesWithMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.bin")
	for _, c := range []struct {
		content string
		perm    fs.FileMode
	}{{"old", 0o644}, {strings.Repeat("new", bufferSize), 0o600}} {
		if err := Write(path, c.perm, func(w io.Writer) error {
			_, err := io.WriteString(w, c.content)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.content {
			t.Errorf("content: got %d bytes, want %d", len(b), len(c.content))
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != c.perm {
			t.Errorf("mode %v, want %v", st.Mode().Perm(), c.perm)
		}
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("folder holds %q, want f.bin only", got)
	}
}

func TestWriteFailureLeavesTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.bin")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, 0o644, func(w io.Writer) error {
		fmt.Fprint(w, "partial")
		return boom
	})
	if err != boom {
		t.Fatalf("got %v, want fill's error as it is", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("target now holds %q, want old", b)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("folder holds %q, want f.bin only", got)
	}
}

func TestWriteIntoMissingFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "f.bin")
	err := Write(path, 0o644, func(io.Writer) error { return nil })
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v, want a not-exist error", err)
	}
}

func TestTempLeavesNamedFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "model.onnx")
	name, err := Temp(target, 0o644, func(w io.Writer) error {
		_, err := io.WriteString(w, "x")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Base(name)
	if filepath.Dir(name) != dir || !strings.HasPrefix(base, ".model.onnx.tmp") {
		t.Errorf("temporary file %s, want .model.onnx.tmp* in %s", name, dir)
	}
	if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("target exists before any rename: %v", err)
	}
	if err := SyncDir(dir); err != nil {
		t.Errorf("SyncDir: %v", err)
	}
}

// TestWriteRefusesNonRegular: a folder or a named pipe at the target (as a
// device such as /dev/null would be) is refused before anything is
// written, and stays what it was.
func TestWriteRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(pipe, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, kind string }{{pipe, "named pipe"}, {sub, "folder"}, {link, "named pipe"}} {
		err := Write(tc.path, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.kind) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("Write(%s): %v, want ErrNotRegular naming the path and %q", tc.path, err, tc.kind)
		}
	}
	if st, err := os.Lstat(pipe); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v, %v", st, err)
	}
	if got := entries(t, dir); len(got) != 3 {
		t.Errorf("folder holds %v, want only pipe, sub and link (no temporary file)", got)
	}
}
