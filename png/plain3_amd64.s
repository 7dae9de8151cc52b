#include "textflag.h"

// gramRange3's AVX-512F kernel: the three-row Gram pass without a
// metric (K00, K10, K11, K20, K21, K22 and J·x), eight columns a step,
// one float64 lane each. The products of float32 values are exact in
// float64; the sums round per lane (no FMA).

// func plain3AVX512(lanes *[9][8]float64, j0, j1, j2, x *float32, n int)
TEXT ·plain3AVX512(SB), NOSPLIT, $0-48
	MOVQ lanes+0(FP), DI
	MOVQ j0+8(FP), AX
	MOVQ j1+16(FP), BX
	MOVQ j2+24(FP), R8
	MOVQ x+32(FP), SI
	MOVQ n+40(FP), CX
	VPXORQ Z10, Z10, Z10 // K00
	VPXORQ Z11, Z11, Z11 // K10
	VPXORQ Z12, Z12, Z12 // K11
	VPXORQ Z13, Z13, Z13 // K20
	VPXORQ Z14, Z14, Z14 // K21
	VPXORQ Z15, Z15, Z15 // K22
	VPXORQ Z16, Z16, Z16 // je0
	VPXORQ Z17, Z17, Z17 // je1
	VPXORQ Z18, Z18, Z18 // je2
	SHRQ $3, CX
	JZ   done

loop:
	VCVTPS2PD (AX), Z0   // v0
	VCVTPS2PD (BX), Z1   // v1
	VCVTPS2PD (R8), Z2   // v2
	VCVTPS2PD (SI), Z4   // x
	VMULPD    Z0, Z0, Z5 // v0·v0
	VADDPD    Z5, Z10, Z10
	VMULPD    Z0, Z1, Z5 // v1·v0
	VADDPD    Z5, Z11, Z11
	VMULPD    Z1, Z1, Z5 // v1·v1
	VADDPD    Z5, Z12, Z12
	VMULPD    Z0, Z2, Z5 // v2·v0
	VADDPD    Z5, Z13, Z13
	VMULPD    Z1, Z2, Z5 // v2·v1
	VADDPD    Z5, Z14, Z14
	VMULPD    Z2, Z2, Z5 // v2·v2
	VADDPD    Z5, Z15, Z15
	VMULPD    Z4, Z0, Z5 // v0·x
	VADDPD    Z5, Z16, Z16
	VMULPD    Z4, Z1, Z5 // v1·x
	VADDPD    Z5, Z17, Z17
	VMULPD    Z4, Z2, Z5 // v2·x
	VADDPD    Z5, Z18, Z18
	ADDQ      $32, AX
	ADDQ      $32, BX
	ADDQ      $32, R8
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
