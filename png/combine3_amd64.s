#include "textflag.h"

// boxCombine's AVX-512F kernel for three tasks with a metric and a
// bound: combine2AVX512 (see there) with a third row, the Go loop's
// operations lane by lane: the same bits.

// Offsets in combine3Args.
#define L0 0
#define L1 8
#define L2 16
#define O0 24
#define O1 32
#define O2 40
#define T 48
#define OMT 56
#define SCALE 64
#define FLAGS 72

// func combine3AVX512(a *combine3Args, dst, j0, j1, j2, p, x, r *float32, n int) int
TEXT ·combine3AVX512(SB), NOSPLIT, $0-80
	MOVQ a+0(FP), R8
	MOVQ dst+8(FP), DI
	MOVQ j0+16(FP), AX
	MOVQ j1+24(FP), BX
	MOVQ j2+32(FP), R13
	MOVQ p+40(FP), SI
	MOVQ x+48(FP), R9
	MOVQ r+56(FP), DX
	MOVQ n+64(FP), CX
	MOVQ FLAGS(R8), R10
	MOVQ $0x8000000000000000, R11
	VPBROADCASTQ R11, Z30 // sign
	VBROADCASTSD L0(R8), Z29
	VBROADCASTSD L1(R8), Z28
	VBROADCASTSD L2(R8), Z22
	VBROADCASTSD O0(R8), Z27
	VBROADCASTSD O1(R8), Z26
	VBROADCASTSD O2(R8), Z21
	VBROADCASTSD T(R8), Z25
	VBROADCASTSD OMT(R8), Z24
	VBROADCASTSD SCALE(R8), Z23
	KXORW K7, K7, K7
	SHRQ $3, CX
	JZ   done

loop:
	VCVTPS2PD (AX), Z0  // j0
	VCVTPS2PD (BX), Z1  // j1
	VCVTPS2PD (R13), Z9 // j2
	VCVTPS2PD (SI), Z3  // p
	VPXORQ    Z4, Z4, Z4 // s = 0
	TESTQ     $1, R10
	JZ        nol0
	VMULPD    Z29, Z0, Z5
	VADDPD    Z5, Z4, Z4

nol0:
	TESTQ  $2, R10
	JZ     nol1
	VMULPD Z28, Z1, Z5
	VADDPD Z5, Z4, Z4

nol1:
	TESTQ  $16, R10
	JZ     nol2
	VMULPD Z22, Z9, Z5
	VADDPD Z5, Z4, Z4

nol2:
	VMULPD    Z3, Z4, Z4  // s·p
	VCVTPS2PD (R9), Z5    // x
	VADDPD    Z4, Z5, Z4  // u = x + s
	VCVTPS2PD (DX), Z2    // r
	VPXORQ    Z30, Z2, Z6 // −r
	VMINPD    Z4, Z2, Z4
	VMAXPD    Z4, Z6, Z4  // clip(u, r)
	TESTQ     $4, R10
	JZ        store
	VPXORQ    Z7, Z7, Z7 // a = 0
	TESTQ     $8, R10
	JZ        mix
	VPXORQ    Z8, Z8, Z8  // so = 0
	VMULPD    Z27, Z0, Z5
	VADDPD    Z5, Z8, Z8
	VMULPD    Z26, Z1, Z5
	VADDPD    Z5, Z8, Z8
	VMULPD    Z21, Z9, Z5
	VADDPD    Z5, Z8, Z8
	VMULPD    Z3, Z8, Z8  // so·p
	VMULPD    Z8, Z23, Z7 // scale·so
	VMINPD    Z7, Z2, Z7
	VMAXPD    Z7, Z6, Z7  // a = clip(scale·so, r)

mix:
	VMULPD Z24, Z4, Z4 // (1 − t)·u
	VMULPD Z7, Z25, Z7 // t·a
	VADDPD Z7, Z4, Z4

store:
	VCVTPD2PS Z4, Y4
	VMOVUPS   Y4, (DI)
	VSUBPS    Y4, Y4, Y5
	VCMPPS    $3, Y5, Y5, K1
	KORW      K1, K7, K7
	ADDQ      $32, AX
	ADDQ      $32, BX
	ADDQ      $32, R13
	ADDQ      $32, SI
	ADDQ      $32, R9
	ADDQ      $32, DX
	ADDQ      $32, DI
	DECQ      CX
	JNZ       loop

done:
	KMOVW K7, AX
	MOVQ  AX, ret+72(FP)
	VZEROUPPER
	RET
