#include "textflag.h"

// func normRowAVX512(dst, x *float32, n int, mu, inv, s, b float64)
//
// dst = float32(((s·(x − mu))·inv) + b), each operation rounded to
// float64 (no fused multiply-add), as NormRow32's Go loop.
TEXT ·normRowAVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   rowdone
	VBROADCASTSD mu+24(FP), Z16
	VBROADCASTSD inv+32(FP), Z17
	VBROADCASTSD s+40(FP), Z18
	VBROADCASTSD b+48(FP), Z19

rowloop:
	VCVTPS2PD (SI), Z0    // x
	VSUBPD    Z16, Z0, Z0 // x − mu
	VMULPD    Z0, Z18, Z0 // s·(x − mu)
	VMULPD    Z17, Z0, Z0 // ·inv
	VADDPD    Z19, Z0, Z0 // + b
	VCVTPD2PS Z0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       rowloop
	VZEROUPPER

rowdone:
	RET

// func normGradRowAVX512(dst, x, gr *float32, n int, mu, inv, m, mx, si float64)
//
// dst = float32(si·((g − m) − x̂·mx)), x̂ = (x − mu)·inv, each operation
// rounded to float64, as NormGradRow32's Go loop.
TEXT ·normGradRowAVX512(SB), NOSPLIT, $0-72
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gr+16(FP), BX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   graddone
	VBROADCASTSD mu+32(FP), Z16
	VBROADCASTSD inv+40(FP), Z17
	VBROADCASTSD m+48(FP), Z18
	VBROADCASTSD mx+56(FP), Z19
	VBROADCASTSD si+64(FP), Z20

gradloop:
	VCVTPS2PD (SI), Z0    // x
	VSUBPD    Z16, Z0, Z0 // x − mu
	VMULPD    Z17, Z0, Z0 // x̂
	VMULPD    Z19, Z0, Z0 // x̂·mx
	VCVTPS2PD (BX), Z1    // g
	VSUBPD    Z18, Z1, Z1 // g − m
	VSUBPD    Z0, Z1, Z1  // (g − m) − x̂·mx
	VMULPD    Z1, Z20, Z1 // si·(…)
	VCVTPD2PS Z1, Y1
	VMOVUPS   Y1, (DI)
	ADDQ      $32, SI
	ADDQ      $32, BX
	ADDQ      $32, DI
	DECQ      CX
	JNZ       gradloop
	VZEROUPPER

graddone:
	RET

// func reluGradAVX512(dst, y, gr *float32, n int)
//
// dst = g·f, f = 1 where y > 0 (ordered: false for NaN) and 0 elsewhere,
// as ReluGrad32's Go loop.
TEXT ·reluGradAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ gr+16(FP), BX
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ   reludone
	VPXORD       Z3, Z3, Z3
	MOVL         $0x3f800000, AX
	VPBROADCASTD AX, Z4 // 1.0

reluloop:
	VMOVUPS    (SI), Z0
	VCMPPS     $0x1e, Z3, Z0, K1 // y > 0 (GT_OQ)
	VMOVAPS.Z  Z4, K1, Z1        // the factor: 1 or 0
	VMULPS     (BX), Z1, Z1
	VMOVUPS    Z1, (DI)
	ADDQ       $64, SI
	ADDQ       $64, BX
	ADDQ       $64, DI
	DECQ       CX
	JNZ        reluloop
	VZEROUPPER

reludone:
	RET
