#include "textflag.h"
#include "consts_amd64.h"

// Update's and Adam.Update's kernels: the Go loops' operations on 8
// float64 lanes, in their order, the results rounded to float32 and their
// finiteness summed as v − v (0 for a finite v, NaN otherwise) in Y15.

// FINITE(y) adds y − y into Y15 (Y14 scratch; VEX: Y registers below 16).
#define FINITE(y) \
	VSUBPS y, y, Y14; \
	VADDPS Y14, Y15, Y15

// FINITERESULT sets ret to whether Y15 has no NaN.
#define FINITERESULT(ret) \
	VCMPPS    $3, Y15, Y15, Y14; \
	VMOVMSKPS Y14, AX; \
	TESTL     AX, AX; \
	SETEQ     ret

// func updateAVX512(dst, base, u *float32, n int, lr float64) bool
TEXT ·updateAVX512(SB), NOSPLIT, $0-41
	MOVQ         dst+0(FP), DI
	MOVQ         base+8(FP), SI
	MOVQ         u+16(FP), BX
	MOVQ         n+24(FP), CX
	VBROADCASTSD lr+32(FP), Z16
	VXORPS       Y15, Y15, Y15
	SHRQ         $3, CX
	JZ           updone

uploop:
	VCVTPS2PD (BX), Z0  // u
	VMULPD    Z16, Z0, Z0 // lr·u
	VCVTPS2PD (SI), Z1  // base
	VSUBPD    Z0, Z1, Z1 // base − lr·u
	VCVTPD2PS Z1, Y1
	VMOVUPS   Y1, (DI)
	FINITE(Y1)
	ADDQ      $32, DI
	ADDQ      $32, SI
	ADDQ      $32, BX
	DECQ      CX
	JNZ       uploop

updone:
	FINITERESULT(ret+40(FP))
	VZEROUPPER
	RET

// func adamUpdateAVX512(dst, base, v, m, w *float32, n int, lr float64, c *consts) bool
TEXT ·adamUpdateAVX512(SB), NOSPLIT, $0-65
	MOVQ         dst+0(FP), DI
	MOVQ         base+8(FP), SI
	MOVQ         v+16(FP), BX
	MOVQ         m+24(FP), R8
	MOVQ         w+32(FP), R9
	MOVQ         n+40(FP), CX
	VBROADCASTSD lr+48(FP), Z27
	MOVQ         c+56(FP), AX
	LOADCONSTS(AX)
	MOVQ         R8, R11 // whether there are moments (R8 itself advances)
	VXORPS       Y15, Y15, Y15
	SHRQ         $3, CX
	JZ           adone

aloop:
	VCVTPS2PD (BX), Z0 // g
	TESTQ     R11, R11
	JZ        anomoments
	VCVTPS2PD (R8), Z1 // m0
	VCVTPS2PD (R9), Z2 // w0
	JMP       amoments

anomoments:
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2

amoments:
	ADAMSTEP // Z5 = step = (m/c1)/d, Z6 = d
	VMULPD    Z27, Z5, Z5 // lr·step
	VCVTPS2PD (SI), Z1    // base
	VSUBPD    Z5, Z1, Z1  // base − lr·step
	VCVTPD2PS Z1, Y1
	VMOVUPS   Y1, (DI)
	FINITE(Y1)
	ADDQ      $32, DI
	ADDQ      $32, SI
	ADDQ      $32, BX
	ADDQ      $32, R8
	ADDQ      $32, R9
	DECQ      CX
	JNZ       aloop

adone:
	FINITERESULT(ret+64(FP))
	VZEROUPPER
	RET
