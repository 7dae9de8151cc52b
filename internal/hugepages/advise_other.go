//go:build !linux

package hugepages

import "unsafe"

// advise does nothing where there is no madvise(MADV_HUGEPAGE).
func advise(p unsafe.Pointer, n uintptr) {}
