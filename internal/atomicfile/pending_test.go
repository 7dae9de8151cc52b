package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "log.jsonl")
	read := func() string {
		b, err := os.ReadFile(target)
		if err != nil {
			return "(" + err.Error() + ")"
		}
		return string(b)
	}
	if err := os.WriteFile(target, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Not committed: the target stays, the temporary file goes.
	f, err := Create(target, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new 1\n"))
	if got := read(); got != "old\n" {
		t.Errorf("before Commit the target reads %q", got)
	}
	if err := f.Close(false); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "old\n" {
		t.Errorf("after Close(false) the target reads %q", got)
	}

	// Committed: the target is replaced, later writes land in it.
	f, err = Create(target, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new 1\n"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new 2\n"))
	if err := f.Close(true); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "new 1\nnew 2\n" {
		t.Errorf("committed target reads %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left in the folder: %v", entries)
	}

	// A target removed while written is an error on Close.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	f, err = Create(filepath.Join(sub, "t.csv"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Commit()
	os.RemoveAll(sub)
	if err := f.Close(true); err == nil || !strings.Contains(err.Error(), "removed or replaced") {
		t.Errorf("Close after the folder was removed: %v", err)
	}

	// Not a regular file.
	if _, err := Create(os.DevNull, 0o644); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Create(%s): %v, want ErrNotRegular", os.DevNull, err)
	}
}
