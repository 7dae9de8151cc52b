#include "textflag.h"
#include "consts_amd64.h"

// func advanceAVX512(m, w, v *float32, n int, c *consts)
//
// Advance's Go loop on 8 float64 lanes, its operations in its order.
TEXT ·advanceAVX512(SB), NOSPLIT, $0-40
	MOVQ m+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ v+16(FP), BX
	MOVQ n+24(FP), CX
	MOVQ c+32(FP), AX
	SHRQ $3, CX
	JZ   done
	LOADCONSTS(AX)

loop:
	VCVTPS2PD (BX), Z0  // g
	VCVTPS2PD (DI), Z1  // m
	VCVTPS2PD (SI), Z2  // w
	VMULPD    Z16, Z1, Z1 // β1·m
	VMULPD    Z17, Z0, Z3 // (1−β1)·g
	VADDPD    Z3, Z1, Z1
	VMULPD    Z18, Z2, Z2 // β2·w
	VMULPD    Z19, Z0, Z4 // (1−β2)·g
	VMULPD    Z0, Z4, Z4  // ·g
	VADDPD    Z4, Z2, Z2
	VCVTPD2PS Z1, Y1
	VCVTPD2PS Z2, Y2
	VMOVUPS   Y1, (DI)
	VMOVUPS   Y2, (SI)
	ADDQ      $32, DI
	ADDQ      $32, SI
	ADDQ      $32, BX
	DECQ      CX
	JNZ       loop
	VZEROUPPER

done:
	RET
