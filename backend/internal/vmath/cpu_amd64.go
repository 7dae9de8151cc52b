package vmath

// maxWidth is the most float32 lanes a kernel handles at once.
const maxWidth = 8

// kernel names a vector instruction set.
type kernel int

const (
	scalar kernel = iota // pure Go
	avx2                 // AVX2+FMA, 4 float64 lanes
	avx512               // AVX-512F, 8 float64 lanes
)

// active is the kernel this CPU runs.
var active = best()

// width is how many elements k handles at once (0 for scalar).
func (k kernel) width() int {
	switch k {
	case avx2:
		return 4
	case avx512:
		return 8
	}
	return 0
}

// sigmoid runs k's Sigmoid kernel on n elements, n a multiple of
// k.width().
func (k kernel) sigmoid(dst, x *float32, n int) {
	switch k {
	case avx2:
		sigmoidAVX2(dst, x, n)
	case avx512:
		sigmoidAVX512(dst, x, n)
	}
}

// String names k (for subtests and benchmarks).
func (k kernel) String() string {
	return [...]string{"scalar", "avx2", "avx512"}[k]
}

// cpuid executes CPUID with the given leaf and sub-leaf.
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// xgetbv0 reads XCR0 (the register states the OS saves on context switch).
func xgetbv0() (eax, edx uint32)

// sigmoidAVX2 is the AVX2+FMA Sigmoid kernel: n a multiple of 4.
//
//go:noescape
func sigmoidAVX2(dst, x *float32, n int)

// sigmoidAVX512 is the AVX-512F Sigmoid kernel: n a multiple of 8.
//
//go:noescape
func sigmoidAVX512(dst, x *float32, n int)

// kernels lists the kernels this CPU can run, scalar first.
func kernels() []kernel {
	ks := []kernel{scalar}
	hasAVX2, hasAVX512 := detect()
	if hasAVX2 {
		ks = append(ks, avx2)
	}
	if hasAVX512 {
		ks = append(ks, avx512)
	}
	return ks
}

// best is the fastest of kernels().
func best() kernel {
	ks := kernels()
	return ks[len(ks)-1]
}

// detect reports whether the CPU and OS support AVX2+FMA and AVX-512F
// (with the YMM, resp. opmask/ZMM, state enabled in XCR0), as
// backend/internal/gemm does. With AVX and FMA, math.Exp takes the FMA
// path the kernels repeat.
func detect() (hasAVX2, hasAVX512 bool) {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false, false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const (
		fma     = 1 << 12
		osxsave = 1 << 27
		avx     = 1 << 28
	)
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false, false
	}
	xcr0, _ := xgetbv0()
	if xcr0&0x6 != 0x6 { // SSE and AVX state
		return false, false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	hasAVX2 = ebx7&(1<<5) != 0
	hasAVX512 = hasAVX2 && ebx7&(1<<16) != 0 && xcr0&0xe0 == 0xe0
	return hasAVX2, hasAVX512
}
