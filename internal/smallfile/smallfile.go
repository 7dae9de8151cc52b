// Package smallfile reads a file a user names that must be small (a
// configuration or jobs file) without ever reading more than a limit:
// devices such as /dev/zero, named pipes (whose open would block until a
// writer comes) and other files that are not regular are refused from a
// stat before they are opened, a file over the limit from its size, and a
// file that grows while it is read is cut off at the limit and refused.
package smallfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by the error for a path that is not a regular
// file (or a link to one).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error for a file over the limit.
var ErrTooLarge = errors.New("file too large")

// sizeError is a message that wraps ErrTooLarge without repeating it.
type sizeError struct{ msg string }

func (e *sizeError) Error() string { return e.msg }
func (e *sizeError) Unwrap() error { return ErrTooLarge }

// Read returns the content of the regular file at path (links followed),
// at most limit bytes. Errors name path, what the file is when it is not
// a regular one, and the limit.
func Read(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := check(path, st, limit); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The path may name another file by now: check the one opened.
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := check(path, st, limit); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &sizeError{fmt.Sprintf("%s grew past the %s limit while it was read", path, Size(limit))}
	}
	return b, nil
}

func check(path string, st fs.FileInfo, limit int64) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, %w: want a file of at most %s", path, Kind(st.Mode()), ErrNotRegular, Size(limit))
	}
	if st.Size() > limit {
		return &sizeError{fmt.Sprintf("%s has %d bytes, more than the %s limit", path, st.Size(), Size(limit))}
	}
	return nil
}

// Kind names what a file of mode m is, for errors: "a folder", "a
// character device", "a named pipe (FIFO)"...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsRegular():
		return "a regular file"
	}
	return "an irregular file (mode " + m.String() + ")"
}

// Size writes n bytes in the unit it is a whole number of (MiB, KiB), else
// in bytes.
func Size(n int64) string {
	switch {
	case n > 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n > 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
