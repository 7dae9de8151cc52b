package hugepages

import (
	"syscall"
	"unsafe"
)

// advise is madvise(p, n, MADV_HUGEPAGE); its error (EINVAL on kernels
// without THP) is of no consequence: the memory keeps small pages.
func advise(p unsafe.Pointer, n uintptr) {
	_ = syscall.Madvise(unsafe.Slice((*byte)(p), n), syscall.MADV_HUGEPAGE)
}
