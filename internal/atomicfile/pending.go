package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File is a file written over a while (a log, a per-step trace) that
// replaces its target only when committed: until the first Commit the
// content lives in a temporary file beside the target, which is left as it
// was; Commit syncs it and renames it over the target, and later writes
// go on into the same file, now at the target's name (the rename keeps
// the open file). A file that is never committed is removed by Close, so
// an existing target survives a run that wrote nothing worth keeping.
type File struct {
	f         *os.File
	target    string
	tmp       string
	committed bool
}

// Create starts a File for target with mode perm. A target that is a
// symbolic link is written through to the file it names (Target); one
// that exists and is not a regular file is refused (ErrNotRegular).
func Create(target string, perm fs.FileMode) (*File, error) {
	target, err := Target(target)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(target), tempPattern(target))
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{f: f, target: target, tmp: f.Name()}, nil
}

// Write writes p to the file.
func (f *File) Write(p []byte) (int, error) { return f.f.Write(p) }

// Name is the target's name.
func (f *File) Name() string { return f.target }

// Commit makes what was written so far the target's content: it syncs the
// file and, the first time, renames it over the target.
func (f *File) Commit() error {
	if err := f.f.Sync(); err != nil {
		return err
	}
	if f.committed {
		return nil
	}
	if err := os.Rename(f.tmp, f.target); err != nil {
		return err
	}
	f.committed = true
	SyncDir(filepath.Dir(f.target)) // best effort: make the rename durable
	return nil
}

// Close commits the file when keep is set and closes it, with an error
// when the target is no longer the file written (removed with its folder,
// or replaced); without keep an uncommitted file is removed (the target
// stays as it was) and a committed one is closed as it is.
func (f *File) Close(keep bool) error {
	var err error
	if keep {
		err = f.Commit()
		if err == nil && !f.stillThere() {
			err = fmt.Errorf("%s was removed or replaced while it was written", f.target)
		}
	}
	err = errors.Join(err, f.f.Close())
	if !f.committed {
		os.Remove(f.tmp)
	}
	return err
}

// stillThere reports whether the target is still the file written (its
// folder may have been removed, or another file renamed over it).
func (f *File) stillThere() bool {
	a, err := f.f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(f.target)
	return err == nil && os.SameFile(a, b)
}
