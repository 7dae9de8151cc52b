package job

import (
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

// Linux inode flags (FS_IOC_GETFLAGS) that forbid replacing a file.
const (
	fsIocGetFlags  = 0x80086601
	fsImmutableFl  = 0x00000010
	fsAppendFl     = 0x00000020
	immutableWords = "it is immutable (chattr +i); run chattr -i on it first"
	appendWords    = "it is append-only (chattr +a); run chattr -a on it first"
)

// unreplaceable says why the existing file at path cannot be
// replaced by a rename, when the cause can be seen before writing: the
// file or its folder is immutable or append-only. "" when nothing forbids
// it (file systems without these flags included).
func unreplaceable(path string) string {
	for _, p := range []string{path, filepath.Dir(path)} {
		switch flags := inodeFlags(p); {
		case flags&fsImmutableFl != 0:
			return p + ": " + immutableWords
		case flags&fsAppendFl != 0:
			return p + ": " + appendWords
		}
	}
	return ""
}

// inodeFlags returns the inode flags of the file at p, or 0 when they
// cannot be read.
func inodeFlags(p string) uint32 {
	f, err := os.Open(p)
	if err != nil {
		return 0
	}
	defer f.Close()
	var flags uint32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), fsIocGetFlags, uintptr(unsafe.Pointer(&flags))); errno != 0 {
		return 0
	}
	return flags
}
