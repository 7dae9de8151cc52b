package smallfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRead: a small regular file (or a link to one) is read whole;
// /dev/zero, a named pipe (no writer: an open would block), a folder and
// a link to a device are refused from a stat before anything is read; a
// file over the limit is refused from its size, and a file whose stat
// says less than it holds (/proc/self/maps: size 0) is cut off at the
// limit and refused.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte("steps: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(5 << 20); err != nil { // sparse: 5 MiB of zeros
		t.Fatal(err)
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	linkSmall, linkZero := filepath.Join(dir, "ls"), filepath.Join(dir, "lz")
	if err := os.Symlink(small, linkSmall); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", linkZero); err != nil {
		t.Fatal(err)
	}
	const limit = 4 << 20
	for _, tc := range []struct {
		name, path string
		limit      int64
		is         error
		want       []string // error substrings; nil: read
	}{
		{"small", small, limit, nil, nil},
		{"link to small", linkSmall, limit, nil, nil},
		{"dev zero", "/dev/zero", limit, ErrNotRegular, []string{"/dev/zero is a character device", "4 MiB"}},
		{"link to dev zero", linkZero, limit, ErrNotRegular, []string{linkZero + " is a character device"}},
		{"fifo", fifo, limit, ErrNotRegular, []string{fifo + " is a named pipe (FIFO)"}},
		{"folder", dir, limit, ErrNotRegular, []string{dir + " is a folder"}},
		{"over the limit", big, limit, ErrTooLarge, []string{big, "5242880 bytes", "4 MiB limit"}},
		{"grows past its stat", "/proc/self/maps", 100, ErrTooLarge, []string{"/proc/self/maps grew past the 100 bytes limit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Read(tc.path, tc.limit)
			if tc.want == nil {
				if err != nil || string(b) != "steps: 3\n" {
					t.Fatalf("Read = %q, %v", b, err)
				}
				return
			}
			if !errors.Is(err, tc.is) {
				t.Fatalf("Read = %d bytes, %v; want %v", len(b), err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
