package job

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

// isModelFile reports whether the file at path starts as an ONNX model
// does: ModelProto's ir_version (field 1, a small varint) first, then
// another of its fields. Every exporter writes ir_version first; a raw
// weights file (a model's external data), a log or a picture does not
// start this way.
func isModelFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return false
	}
	// 0x08: field 1, varint; ir_version 1..127 fits one byte; the next
	// tag is one of ModelProto's fields 2..8, 14 or 20 as length-delimited
	// or varint (producer_name 0x12, producer_version 0x1a, domain 0x22,
	// model_version 0x28, doc_string 0x32, graph 0x3a, opset_import 0x42,
	// metadata_props 0x72, training_info 0xa2 0x01, functions 0xca 0x01).
	if b[0] != 0x08 || b[1] == 0 || b[1] >= 0x80 {
		return false
	}
	switch b[2] {
	case 0x12, 0x1a, 0x22, 0x28, 0x32, 0x3a, 0x42, 0x72, 0xa2, 0xca:
		return true
	}
	return false
}

// Linux inode flags (FS_IOC_GETFLAGS) that forbid replacing a file.
const (
	fsIocGetFlags  = 0x80086601
	fsImmutableFl  = 0x00000010
	fsAppendFl     = 0x00000020
	immutableWords = "it is immutable (chattr +i); run chattr -i on it first"
	appendWords    = "it is append-only (chattr +a); run chattr -a on it first"
)

// unreplaceable says why the existing file at path (fi) cannot be
// replaced by a rename, when the cause can be seen before writing: the
// file or its folder is immutable or append-only. "" when nothing forbids
// it (file systems without these flags included).
func unreplaceable(path string, fi os.FileInfo) string {
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
