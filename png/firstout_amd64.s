#include "textflag.h"

// firstOutside's AVX-512F kernel: the first of n float32s (a multiple of
// 16) not in (lo, hi], sixteen at a time, by the ordered compares x > lo
// and x ≤ hi (false for NaN, as Go's are).

// func firstOutAVX512(x *float32, n int, lo, hi float32) int
TEXT ·firstOutAVX512(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS lo+16(FP), Z1
	VBROADCASTSS hi+20(FP), Z2
	XORQ         DX, DX // index of the block

loop:
	CMPQ    DX, CX
	JGE     none
	VMOVUPS (SI)(DX*4), Z0
	VCMPPS  $0x1e, Z1, Z0, K1     // x > lo
	VCMPPS  $0x12, Z2, Z0, K1, K2 // and x ≤ hi
	KMOVW   K2, AX
	CMPL    AX, $0xffff
	JNE     found
	ADDQ    $16, DX
	JMP     loop

found:
	XORL  $0xffff, AX
	BSFL  AX, AX
	ADDQ  AX, DX
	MOVQ  DX, ret+24(FP)
	VZEROUPPER
	RET

none:
	MOVQ CX, ret+24(FP)
	VZEROUPPER
	RET
