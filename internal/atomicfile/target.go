package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrSpecialLink is returned (wrapped) for a path that is, or links to, a
// file of the system's device or process folders (/dev/stdout is a link
// to /proc/self/fd/1): writing through it reaches whatever that descriptor
// is, and renaming over it would replace a system file.
var ErrSpecialLink = errors.New("a link into /dev or /proc")

// Target returns the file that writing to path replaces: path itself, or,
// when path is a symbolic link (through any chain of links), the file it
// finally names, so that writing goes through the link to its target (in
// the target's folder) and never replaces the link with a regular file.
// A link whose target is missing, a link into /dev or /proc, and an
// existing target that is not a regular file are refused with an error
// naming path.
func Target(path string) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		if isSystemPath(path) {
			return "", fmt.Errorf("%w: %s is in the system's device or process folder; write to a file instead", ErrSpecialLink, path)
		}
		return path, nil
	}
	if err != nil {
		return "", err
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		if !fi.Mode().IsRegular() {
			return "", fmt.Errorf("%w: %s is a %s; write to a file instead", ErrNotRegular, path, Kind(fi.Mode()))
		}
		return path, nil
	}
	// Each link of the chain is checked: /dev/stdout names
	// /proc/self/fd/1, which names whatever standard output is.
	for p, hops := path, 0; hops < 255; hops++ {
		li, err := os.Lstat(p)
		if err != nil || li.Mode()&os.ModeSymlink == 0 {
			break
		}
		next, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(next) {
			next = filepath.Join(filepath.Dir(p), next)
		}
		if isSystemPath(next) || isSystemPath(p) {
			return "", fmt.Errorf("%w: %s links to %s; write to a file instead", ErrSpecialLink, path, next)
		}
		p = next
	}
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s is a link to a missing file; give a file path (or create the file it names)", path)
	}
	if err != nil {
		return "", fmt.Errorf("%s: resolving the link: %w", path, err)
	}
	if isSystemPath(real) || isSystemPath(path) {
		return "", fmt.Errorf("%w: %s links to %s; write to a file instead", ErrSpecialLink, path, real)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s links to %s, a %s; write to a file instead", ErrNotRegular, path, real, Kind(st.Mode()))
	}
	return real, nil
}

// isSystemPath reports whether p lies in /dev or /proc (after making it
// absolute and clean).
func isSystemPath(p string) bool {
	a, err := filepath.Abs(p)
	if err != nil {
		return false
	}
	for _, root := range []string{"/dev", "/proc"} {
		if a == root || strings.HasPrefix(a, root+"/") {
			return true
		}
	}
	return false
}
