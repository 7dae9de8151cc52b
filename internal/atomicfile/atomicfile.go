// Package atomicfile owns writing a file so that readers see either the old
// file or the whole new one, never a part: the content goes to a temporary
// file beside the target, which is synced, given its mode and renamed over
// the target. It is the one implementation behind importer.Save,
// npz.Write, finetune.WriteCheckpoint and models.WriteModel.
//
// Errors come back as the os package or the caller's fill function made
// them (they name the temporary file where one is involved); callers add
// their own package prefix and the target's name.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotRegular is returned (wrapped) when the target exists and is not a
// regular file (a device such as /dev/null, a folder, a named pipe, a
// socket, or a link to one): renaming over it would replace it, as root
// even a device node, so it is refused before anything is written.
var ErrNotRegular = errors.New("not a regular file")

// bufferSize is the write buffer between fill and the temporary file.
const bufferSize = 1 << 20

// Write writes the file at path through fill (through a symbolic link to
// the file it names, Target): into a temporary file in that file's folder, synced, with mode perm, then renamed over path, and the
// folder synced on a best-effort basis (some file systems refuse to sync a
// folder). On error the temporary file is removed and path is left as it
// was.
func Write(path string, perm fs.FileMode, fill func(io.Writer) error) error {
	path, err := Target(path)
	if err != nil {
		return err
	}
	tmp, err := Temp(path, perm, fill)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	SyncDir(filepath.Dir(path)) // best effort: make the rename durable
	return nil
}

// Temp writes a new temporary file in target's folder through fill,
// buffered, synced, with mode perm and closed, and returns its name, for a
// caller that renames it over target itself (importer.Save renames a model
// and its external data file in turn). Its name starts with "." and
// target's base name and contains ".tmp". On error nothing is left behind.
// A target that exists and is not a regular file is refused
// (ErrNotRegular), and so is a symbolic link: a caller that renames over
// target resolves it first (Target), or the rename would replace the link.
func Temp(target string, perm fs.FileMode, fill func(io.Writer) error) (name string, err error) {
	if st, err := os.Lstat(target); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("%w: %s is a symbolic link; resolve it first (atomicfile.Target)", ErrNotRegular, target)
	}
	if _, err := Target(target); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(target), tempPattern(target))
	if err != nil {
		return "", err
	}
	tmp := f.Name() // not name: the returns below set name to ""
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, bufferSize)
	if err = fill(bw); err != nil {
		return "", err
	}
	if err = bw.Flush(); err != nil {
		return "", err
	}
	if err = f.Sync(); err != nil {
		return "", err
	}
	if err = f.Chmod(perm); err != nil {
		return "", err
	}
	if err = f.Close(); err != nil {
		return "", err
	}
	return tmp, nil
}

// SyncDir flushes a folder's entries (renames into it) to disk. A file
// system that cannot sync folders (os.ErrInvalid) is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}

// Kind names a non-regular file mode in words ("folder", "named pipe",
// "character device", ...), for errors that say why a path cannot be read
// or written as a file.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "folder"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file (" + m.String() + ")"
}
