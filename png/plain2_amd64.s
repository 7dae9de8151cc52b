#include "textflag.h"

// gramRange2's AVX-512F kernel: the two-row Gram pass without a metric
// (K00, K10, K11 and J·x), eight columns a step, one float64 lane each.
// The products of float32 values are exact in float64; the sums round
// per lane (no FMA).

// func plain2AVX512(lanes *[5][8]float64, j0, j1, x *float32, n int)
TEXT ·plain2AVX512(SB), NOSPLIT, $0-40
	MOVQ lanes+0(FP), DI
	MOVQ j0+8(FP), AX
	MOVQ j1+16(FP), BX
	MOVQ x+24(FP), SI
	MOVQ n+32(FP), CX
	VPXORQ Z10, Z10, Z10 // K00
	VPXORQ Z11, Z11, Z11 // K10
	VPXORQ Z12, Z12, Z12 // K11
	VPXORQ Z13, Z13, Z13 // je0
	VPXORQ Z14, Z14, Z14 // je1
	SHRQ $3, CX
	JZ   done

loop:
	VCVTPS2PD (AX), Z0   // v0
	VCVTPS2PD (BX), Z1   // v1
	VCVTPS2PD (SI), Z3   // x
	VMULPD    Z0, Z0, Z4 // v0·v0
	VADDPD    Z4, Z10, Z10
	VMULPD    Z0, Z1, Z5 // v1·v0
	VADDPD    Z5, Z11, Z11
	VMULPD    Z1, Z1, Z6 // v1·v1
	VADDPD    Z6, Z12, Z12
	VMULPD    Z3, Z0, Z7 // v0·x
	VADDPD    Z7, Z13, Z13
	VMULPD    Z3, Z1, Z8 // v1·x
	VADDPD    Z8, Z14, Z14
	ADDQ      $32, AX
	ADDQ      $32, BX
	ADDQ      $32, SI
	DECQ      CX
	JNZ       loop

done:
	VMOVUPD Z10, (DI)
	VMOVUPD Z11, 64(DI)
	VMOVUPD Z12, 128(DI)
	VMOVUPD Z13, 192(DI)
	VMOVUPD Z14, 256(DI)
	VZEROUPPER
	RET
