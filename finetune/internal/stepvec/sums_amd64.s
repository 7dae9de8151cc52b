#include "textflag.h"

// The sums' kernels: each term's operations as in the Go loops, on 8
// float64 lanes, each lane summing its terms in index order.

// func scaleSumsAVX512(prop, metric, v *float32, n int, lane *[16]float64)
TEXT ·scaleSumsAVX512(SB), NOSPLIT, $0-40
	MOVQ   prop+0(FP), SI
	MOVQ   metric+8(FP), DX
	MOVQ   v+16(FP), BX
	MOVQ   n+24(FP), CX
	MOVQ   lane+32(FP), DI
	MOVQ   DX, R11 // whether there is a metric (DX itself advances)
	MOVQ   $0x3ff0000000000000, AX
	VPBROADCASTQ AX, Z24 // 1
	VPXORQ Z10, Z10, Z10 // Σ u·u/p
	VPXORQ Z11, Z11, Z11 // Σ p·x·x
	SHRQ   $3, CX
	JZ     ssdone

ssloop:
	VMOVAPD   Z24, Z2 // p = 1
	TESTQ     R11, R11
	JZ        ssunit
	VCVTPS2PD (DX), Z2 // p

ssunit:
	VCVTPS2PD (SI), Z0  // u
	VCVTPS2PD (BX), Z1  // x
	VMULPD    Z0, Z0, Z0 // u·u
	VDIVPD    Z2, Z0, Z0 // /p
	VADDPD    Z0, Z10, Z10
	VMULPD    Z1, Z2, Z3 // p·x
	VMULPD    Z1, Z3, Z3 // ·x
	VADDPD    Z3, Z11, Z11
	ADDQ      $32, SI
	ADDQ      $32, DX
	ADDQ      $32, BX
	DECQ      CX
	JNZ       ssloop

ssdone:
	VMOVUPD Z10, (DI)
	VMOVUPD Z11, 64(DI)
	VZEROUPPER
	RET

// func deltaDotAVX512(grad, before, after *float32, n int, lane *[8]float64)
TEXT ·deltaDotAVX512(SB), NOSPLIT, $0-40
	MOVQ   grad+0(FP), SI
	MOVQ   before+8(FP), DX
	MOVQ   after+16(FP), BX
	MOVQ   n+24(FP), CX
	MOVQ   lane+32(FP), DI
	VPXORQ Z10, Z10, Z10 // Σ g·(after − before)
	SHRQ   $3, CX
	JZ     dddone

ddloop:
	VCVTPS2PD (BX), Z1  // after
	VCVTPS2PD (DX), Z2  // before
	VSUBPD    Z2, Z1, Z1 // after − before
	VCVTPS2PD (SI), Z0  // g
	VMULPD    Z1, Z0, Z0 // g·(after − before)
	VADDPD    Z0, Z10, Z10
	ADDQ      $32, SI
	ADDQ      $32, DX
	ADDQ      $32, BX
	DECQ      CX
	JNZ       ddloop

dddone:
	VMOVUPD Z10, (DI)
	VZEROUPPER
	RET
