#include "textflag.h"

// func affineReluAVX512(dst, x *float32, n int, a, b float32, relu int)
//
// dst = a·x + b, the product rounded, then the sum (VMULPS, VADDPS: Go's
// float32 a*x + b on amd64, which does not fuse them). With relu ≠ 0,
// then max(·, 0) as Go's max(v, 0) gives it: VMAXPS with 0 as the first
// source returns the second (v) where v is NaN or ±0, so −0 stays −0, and
// adding +0 then turns it into +0 (and changes nothing else).
TEXT ·affineReluAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS a+24(FP), Z1
	VBROADCASTSS b+28(FP), Z2
	VPXORD Z3, Z3, Z3
	MOVQ relu+32(FP), DX
	SHRQ $4, CX
	JZ done
	TESTQ DX, DX
	JZ affine
relu:
	VMOVUPS (SI), Z0
	VMULPS Z1, Z0, Z0
	VADDPS Z2, Z0, Z0
	VMAXPS Z0, Z3, Z0
	VADDPS Z3, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ relu
	JMP done
affine:
	VMOVUPS (SI), Z0
	VMULPS Z1, Z0, Z0
	VADDPS Z2, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ affine
done:
	VZEROUPPER
	RET
