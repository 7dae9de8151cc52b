#include "textflag.h"
#include "consts_amd64.h"

// func proposeAVX512(prop, metric, bound, v, m, w, pend *float32, n int, c *consts)
//
// Propose's Go loop on 8 float64 lanes, its operations in its order.
TEXT ·proposeAVX512(SB), NOSPLIT, $0-72
	MOVQ prop+0(FP), DI
	MOVQ metric+8(FP), SI
	MOVQ bound+16(FP), DX
	MOVQ v+24(FP), BX
	MOVQ m+32(FP), R8
	MOVQ w+40(FP), R9
	MOVQ pend+48(FP), R10
	MOVQ n+56(FP), CX
	MOVQ c+64(FP), AX
	SHRQ $3, CX
	JZ   done
	LOADCONSTS(AX)
	MOVQ R8, R11  // whether there are moments (R8 itself advances)
	MOVQ R10, R12 // whether there is a pending step

loop:
	VCVTPS2PD (BX), Z0 // g
	TESTQ     R11, R11
	JZ        nomoments
	VCVTPS2PD (R8), Z1 // m0
	VCVTPS2PD (R9), Z2 // w0
	JMP       moments

nomoments:
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2

moments:
	TESTQ R12, R12
	JZ    pended

	// the pending step: m0, w0 = float32(β1·m0 + (1−β1)·p), float32(β2·w0 + (1−β2)·p·p)
	VCVTPS2PD (R10), Z3
	VMULPD    Z16, Z1, Z1
	VMULPD    Z17, Z3, Z4
	VADDPD    Z4, Z1, Z1
	VCVTPD2PS Z1, Y1
	VCVTPS2PD Y1, Z1
	VMULPD    Z18, Z2, Z2
	VMULPD    Z19, Z3, Z4
	VMULPD    Z3, Z4, Z4
	VADDPD    Z4, Z2, Z2
	VCVTPD2PS Z2, Y2
	VCVTPS2PD Y2, Z2

pended:
	ADAMSTEP // Z5 = (m/c1)/d, Z6 = d
	VCVTPD2PS Z5, Y5
	VMOVUPS   Y5, (DI)
	VDIVPD    Z6, Z24, Z7 // 1/d
	VCVTPD2PS Z7, Y7
	VMOVUPS   Y7, (SI)

	// the bound: √r0 where m0 = 0; else r = +Inf where c = 0, else
	// r = r0 + a·a/c; √r, or max(|a|/ε, √r0) where r > rmax
	VCMPPD    $4, Z26, Z1, K1 // m0 ≠ 0 (unordered: NaN too)
	VMOVAPD   Z23, Z10        // r0
	KORTESTW  K1, K1
	JZ        bounded
	VMULPD    Z16, Z1, Z8     // β1·m0
	VDIVPD    Z20, Z8, Z8     // a
	VSUBPD    Z8, Z26, Z11    // −a
	VMAXPD    Z8, Z11, Z11    // |a|
	VDIVPD    Z22, Z11, Z11   // |a|/ε
	VMAXPD    Z11, Z29, Z11   // max(|a|/ε, √r0); NaN where a is, as Go's max
	VMULPD    Z18, Z2, Z9     // β2·w0
	VDIVPD    Z21, Z9, Z9     // c
	VMULPD    Z8, Z8, Z8      // a·a
	VDIVPD    Z9, Z8, Z8      // a·a/c
	VADDPD    Z8, Z23, K1, Z10 // r0 + a·a/c where m0 ≠ 0
	VCMPPD    $0, Z26, Z9, K2 // c = 0 (ordered)
	KANDW     K1, K2, K2
	VMOVAPD   Z25, K2, Z10    // r = +Inf where m0 ≠ 0 and c = 0
	VCMPPD    $0x1e, Z28, Z10, K3 // r > rmax (ordered)
	KANDW     K1, K3, K3
	VSQRTPD   Z10, Z10
	VMOVAPD   Z11, K3, Z10    // max(|a|/ε, √r0) there
	JMP       store

bounded:
	VSQRTPD Z10, Z10

store:
	VCVTPD2PS Z10, Y10
	VMOVUPS   Y10, (DX)

	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, BX
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	DECQ CX
	JNZ  loop
	VZEROUPPER

done:
	RET
