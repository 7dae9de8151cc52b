// Package cpu reports the vector instruction sets the assembly
// kernels (backend's gemm and vmath, png's and finetune's vector passes) can use on this
// CPU, with the register state the operating system saves.
package cpu

// AVX2 is true when the CPU and OS support AVX2 with FMA (and AVX's YMM
// state is enabled in XCR0).
var AVX2 bool

// AVX512 is true when AVX2 holds and the CPU supports AVX-512F with the
// opmask and ZMM state enabled in XCR0.
var AVX512 bool

func init() { AVX2, AVX512 = detect() }
