#include "textflag.h"

// combineTwo's AVX-512F kernel: d = e + (a0·x0 + a1·x1) (e nil: +0 + …),
// eight values a step, one float64 lane each, the Go loop's operations
// in its order (no FMA) and one VCVTPD2PS (round to nearest, as
// float32()): the same bits; the squares of d summed per lane.

// func two2AVX512(d, e, x0, x1 *float32, a0, a1 float64, n int, ss *[8]float64)
TEXT ·two2AVX512(SB), NOSPLIT, $0-64
	MOVQ d+0(FP), DI
	MOVQ e+8(FP), SI
	MOVQ x0+16(FP), AX
	MOVQ x1+24(FP), BX
	VBROADCASTSD a0+32(FP), Z29
	VBROADCASTSD a1+40(FP), Z28
	MOVQ n+48(FP), CX
	MOVQ ss+56(FP), R8
	VPXORQ Z10, Z10, Z10 // Σ d²
	VPXORQ Z3, Z3, Z3    // e = 0 where nil
	SHRQ $3, CX
	JZ   done

loop:
	VCVTPS2PD (AX), Z0
	VCVTPS2PD (BX), Z1
	VMULPD    Z29, Z0, Z0 // a0·x0
	VMULPD    Z28, Z1, Z1 // a1·x1
	VADDPD    Z1, Z0, Z0
	TESTQ     SI, SI
	JZ        zero
	VCVTPS2PD (SI), Z3
	ADDQ      $32, SI

zero:
	VADDPD    Z0, Z3, Z0 // e + (…)
	VCVTPD2PS Z0, Y0
	VMOVUPS   Y0, (DI)
	VCVTPS2PD Y0, Z0
	VMULPD    Z0, Z0, Z0
	VADDPD    Z0, Z10, Z10
	ADDQ      $32, AX
	ADDQ      $32, BX
	ADDQ      $32, DI
	DECQ      CX
	JNZ       loop

done:
	VMOVUPD Z10, (R8)
	VZEROUPPER
	RET
