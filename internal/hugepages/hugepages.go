// Package hugepages asks the kernel to back large buffers with transparent
// huge pages (2 MB instead of 4 KB pages): the model's activations,
// gradients, Jacobian and scratch buffers are hundreds of megabytes read
// in strided patterns (im2col, the GEMM's panels), and with 4 KB pages the
// TLB misses cost a few percent of a step (the full MTAN at 64×96: 2.40–
// 2.43 s with the kernel's THP mode "always", 2.51–2.56 s with
// "madvise", Debian's default, where only advised memory gets them).
//
// Advise is a hint: on other systems, with THP "never", or when the kernel
// has no huge page at hand, it changes nothing, and memory already touched
// keeps its small pages (khugepaged may merge them later).
package hugepages

import "unsafe"

// MinBytes is the smallest buffer Advise marks: smaller ones rarely hold
// a whole aligned 2 MB page.
const MinBytes = 4 << 20

// pageSize is the x86-64 and arm64 transparent huge page.
const pageSize = 2 << 20

// Advise marks the 2 MB pages that lie wholly inside s for transparent
// huge pages, when s spans at least MinBytes. Call it right after
// allocating s, before its pages are first written.
func Advise[T any](s []T) {
	if len(s) == 0 {
		return
	}
	var z T
	n := uintptr(len(s)) * unsafe.Sizeof(z)
	if n < MinBytes {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	lo := (start + pageSize - 1) &^ (pageSize - 1)
	hi := (start + n) &^ (pageSize - 1)
	if hi <= lo {
		return
	}
	advise(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), lo-start), hi-lo)
}
