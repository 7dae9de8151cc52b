#include "textflag.h"

// metricGramRange2's AVX-512F kernel: the two-task metric Gram pass,
// eight columns a step, one float64 lane each. Per lane the Go loop's
// operations in its order (products, then the sum; no FMA).

// func gram2AVX512(lanes *[5][8]float64, j0, j1, p, x *float32, n int)
TEXT ·gram2AVX512(SB), NOSPLIT, $0-48
	MOVQ lanes+0(FP), DI
	MOVQ j0+8(FP), AX
	MOVQ j1+16(FP), BX
	MOVQ p+24(FP), DX
	MOVQ x+32(FP), SI
	MOVQ n+40(FP), CX
	VPXORQ Z10, Z10, Z10 // K00
	VPXORQ Z11, Z11, Z11 // K10
	VPXORQ Z12, Z12, Z12 // K11
	VPXORQ Z13, Z13, Z13 // jp0
	VPXORQ Z14, Z14, Z14 // jp1
	SHRQ $3, CX
	JZ   done

loop:
	VCVTPS2PD (AX), Z0  // v0
	VCVTPS2PD (BX), Z1  // v1
	VCVTPS2PD (DX), Z2  // p
	VCVTPS2PD (SI), Z3  // x
	VMULPD    Z2, Z0, Z4 // a0 = v0·p
	VMULPD    Z0, Z4, Z4 // a0·v0
	VADDPD    Z4, Z10, Z10
	VMULPD    Z3, Z0, Z5 // v0·x
	VADDPD    Z5, Z13, Z13
	VMULPD    Z2, Z1, Z6 // a1 = v1·p
	VMULPD    Z0, Z6, Z7 // a1·v0
	VADDPD    Z7, Z11, Z11
	VMULPD    Z1, Z6, Z6 // a1·v1
	VADDPD    Z6, Z12, Z12
	VMULPD    Z3, Z1, Z5 // v1·x
	VADDPD    Z5, Z14, Z14
	ADDQ      $32, AX
	ADDQ      $32, BX
	ADDQ      $32, DX
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
