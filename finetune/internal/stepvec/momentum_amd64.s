#include "textflag.h"

// Momentum's kernels: the Go loops' operations on 8 float64 lanes, in
// their order.

// func momProposeAVX512(prop, v, m, pend *float32, n int, mu float64)
TEXT ·momProposeAVX512(SB), NOSPLIT, $0-48
	MOVQ         prop+0(FP), DI
	MOVQ         v+8(FP), BX
	MOVQ         m+16(FP), R8
	MOVQ         pend+24(FP), R10
	MOVQ         n+32(FP), CX
	VBROADCASTSD mu+40(FP), Z16
	MOVQ         R8, R11  // whether there is a buffer (R8 itself advances)
	MOVQ         R10, R12 // whether there is a pending step
	SHRQ         $3, CX
	JZ           mpdone

mploop:
	VPXORQ    Z1, Z1, Z1 // b = 0
	TESTQ     R11, R11
	JZ        mpnobuf
	VCVTPS2PD (R8), Z1   // b

mpnobuf:
	TESTQ     R12, R12
	JZ        mppended
	VCVTPS2PD (R10), Z2  // p
	VMULPD    Z16, Z1, Z1 // μb
	VADDPD    Z2, Z1, Z1  // + p
	VCVTPD2PS Z1, Y1
	VCVTPS2PD Y1, Z1

mppended:
	VCVTPS2PD (BX), Z0  // v
	VMULPD    Z16, Z1, Z1 // μb
	VADDPD    Z0, Z1, Z1  // + v
	VCVTPD2PS Z1, Y1
	VMOVUPS   Y1, (DI)
	ADDQ      $32, DI
	ADDQ      $32, BX
	ADDQ      $32, R8
	ADDQ      $32, R10
	DECQ      CX
	JNZ       mploop
	VZEROUPPER

mpdone:
	RET

// func momUpdateAVX512(dst, base, v, m *float32, n int, mu, lr float64) bool
//
// The values written are checked as Update's are: v − v summed in Y15.
TEXT ·momUpdateAVX512(SB), NOSPLIT, $0-57
	MOVQ         dst+0(FP), DI
	MOVQ         base+8(FP), SI
	MOVQ         v+16(FP), BX
	MOVQ         m+24(FP), R8
	MOVQ         n+32(FP), CX
	VBROADCASTSD mu+40(FP), Z16
	VBROADCASTSD lr+48(FP), Z17
	MOVQ         R8, R11 // whether there is a buffer (R8 itself advances)
	VXORPS       Y15, Y15, Y15
	SHRQ         $3, CX
	JZ           mudone

muloop:
	VPXORQ    Z1, Z1, Z1 // b = 0
	TESTQ     R11, R11
	JZ        munobuf
	VCVTPS2PD (R8), Z1   // b

munobuf:
	VCVTPS2PD (BX), Z0  // v
	VMULPD    Z16, Z1, Z1 // μb
	VADDPD    Z0, Z1, Z1  // step = μb + v
	VMULPD    Z17, Z1, Z1 // lr·step
	VCVTPS2PD (SI), Z2  // base
	VSUBPD    Z1, Z2, Z2  // base − lr·step
	VCVTPD2PS Z2, Y2
	VMOVUPS   Y2, (DI)
	VSUBPS    Y2, Y2, Y14
	VADDPS    Y14, Y15, Y15
	ADDQ      $32, DI
	ADDQ      $32, SI
	ADDQ      $32, BX
	ADDQ      $32, R8
	DECQ      CX
	JNZ       muloop

mudone:
	VCMPPS    $3, Y15, Y15, Y14 // NaN lanes
	VMOVMSKPS Y14, AX
	TESTL     AX, AX
	SETEQ     ret+56(FP)
	VZEROUPPER
	RET

// func momAdvanceAVX512(m, v *float32, n int, mu float64)
TEXT ·momAdvanceAVX512(SB), NOSPLIT, $0-32
	MOVQ         m+0(FP), DI
	MOVQ         v+8(FP), BX
	MOVQ         n+16(FP), CX
	VBROADCASTSD mu+24(FP), Z16
	SHRQ         $3, CX
	JZ           madone

maloop:
	VCVTPS2PD (DI), Z1  // m
	VCVTPS2PD (BX), Z0  // v
	VMULPD    Z16, Z1, Z1 // μm
	VADDPD    Z0, Z1, Z1  // + v
	VCVTPD2PS Z1, Y1
	VMOVUPS   Y1, (DI)
	ADDQ      $32, DI
	ADDQ      $32, BX
	DECQ      CX
	JNZ       maloop
	VZEROUPPER

madone:
	RET
