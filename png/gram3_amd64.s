#include "textflag.h"

// metricGramRange3's AVX-512F kernel: the three-task metric Gram pass,
// eight columns a step, one float64 lane each, with the Go loop's
// operations in its order (products, then the sum; no FMA).

// func gram3AVX512(lanes *[9][8]float64, j0, j1, j2, p, x *float32, n int)
TEXT ·gram3AVX512(SB), NOSPLIT, $0-56
	MOVQ lanes+0(FP), DI
	MOVQ j0+8(FP), AX
	MOVQ j1+16(FP), BX
	MOVQ j2+24(FP), R8
	MOVQ p+32(FP), DX
	MOVQ x+40(FP), SI
	MOVQ n+48(FP), CX
	VPXORQ Z10, Z10, Z10 // K00
	VPXORQ Z11, Z11, Z11 // K10
	VPXORQ Z12, Z12, Z12 // K11
	VPXORQ Z13, Z13, Z13 // K20
	VPXORQ Z14, Z14, Z14 // K21
	VPXORQ Z15, Z15, Z15 // K22
	VPXORQ Z16, Z16, Z16 // jp0
	VPXORQ Z17, Z17, Z17 // jp1
	VPXORQ Z18, Z18, Z18 // jp2
	SHRQ $3, CX
	JZ   done

loop:
	VCVTPS2PD (AX), Z0 // v0
	VCVTPS2PD (BX), Z1 // v1
	VCVTPS2PD (R8), Z2 // v2
	VCVTPS2PD (DX), Z3 // p
	VCVTPS2PD (SI), Z4 // x
	VMULPD    Z3, Z0, Z5 // a0 = v0·p
	VMULPD    Z0, Z5, Z5
	VADDPD    Z5, Z10, Z10
	VMULPD    Z4, Z0, Z5 // v0·x
	VADDPD    Z5, Z16, Z16
	VMULPD    Z3, Z1, Z6 // a1 = v1·p
	VMULPD    Z0, Z6, Z5
	VADDPD    Z5, Z11, Z11
	VMULPD    Z1, Z6, Z6
	VADDPD    Z6, Z12, Z12
	VMULPD    Z4, Z1, Z5 // v1·x
	VADDPD    Z5, Z17, Z17
	VMULPD    Z3, Z2, Z7 // a2 = v2·p
	VMULPD    Z0, Z7, Z5
	VADDPD    Z5, Z13, Z13
	VMULPD    Z1, Z7, Z5
	VADDPD    Z5, Z14, Z14
	VMULPD    Z2, Z7, Z7
	VADDPD    Z7, Z15, Z15
	VMULPD    Z4, Z2, Z5 // v2·x
	VADDPD    Z5, Z18, Z18
	ADDQ      $32, AX
	ADDQ      $32, BX
	ADDQ      $32, R8
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
	VMOVUPD Z15, 320(DI)
	VMOVUPD Z16, 384(DI)
	VMOVUPD Z17, 448(DI)
	VMOVUPD Z18, 512(DI)
	VZEROUPPER
	RET
