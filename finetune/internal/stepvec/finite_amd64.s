#include "textflag.h"

// func finiteAVX512(x *float32, n int) bool
//
// Adds v − v (0 for a finite v, NaN for ±Inf and NaN) over the values
// into lanes of float32 sums, 64 values per iteration, then 8; every
// value is finite when no sum is NaN.
TEXT ·finiteAVX512(SB), NOSPLIT, $0-17
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	CMPQ   CX, $64
	JB     eights

sixtyfours:
	VMOVUPS (SI), Z4
	VMOVUPS 64(SI), Z5
	VMOVUPS 128(SI), Z6
	VMOVUPS 192(SI), Z7
	VSUBPS  Z4, Z4, Z4
	VSUBPS  Z5, Z5, Z5
	VSUBPS  Z6, Z6, Z6
	VSUBPS  Z7, Z7, Z7
	VADDPS  Z4, Z0, Z0
	VADDPS  Z5, Z1, Z1
	VADDPS  Z6, Z2, Z2
	VADDPS  Z7, Z3, Z3
	ADDQ    $256, SI
	SUBQ    $64, CX
	CMPQ    CX, $64
	JAE     sixtyfours

eights:
	TESTQ CX, CX
	JZ    sum

eight:
	VMOVUPS (SI), Y4
	VSUBPS  Y4, Y4, Y4
	VADDPS  Z4, Z0, Z0 // the upper half of Z4 is zeroed by the VEX subtraction
	ADDQ    $32, SI
	SUBQ    $8, CX
	JNZ     eight

sum:
	VADDPS   Z1, Z0, Z0
	VADDPS   Z3, Z2, Z2
	VADDPS   Z2, Z0, Z0
	VCMPPS   $3, Z0, Z0, K1 // unordered: NaN
	KORTESTW K1, K1
	SETEQ    ret+16(FP)
	VZEROUPPER
	RET
