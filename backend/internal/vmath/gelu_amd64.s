#include "textflag.h"

// Gelu32's AVX-512F kernels, around Exp64's: geluPreAVX512 computes
// phiPoly per float64 lane, geluPostAVX512 phiFinish and the rounded
// product, each with the scalar code's operations in its order (separate
// products and sums, no fused multiply-add; the order of the two
// operands of a sum or product does not change its bits), so the results
// are the scalar loop's bits. The constants are phiConsts (c): c1 =
// 0.5/√2, k1 = 30/13, k2 = 17/13, −1, 1, 0.5, C0…C12, the sign bit.

// func geluPreAVX512(t, p *float64, x *float32, n int, c *[20]float64)
TEXT ·geluPreAVX512(SB), NOSPLIT, $0-40
	MOVQ t+0(FP), DI
	MOVQ p+8(FP), BX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ c+32(FP), R8
	SHRQ $3, CX
	JZ   predone
	VBROADCASTSD 0(R8), Z16   // c1
	VBROADCASTSD 8(R8), Z17   // k1
	VBROADCASTSD 16(R8), Z18  // k2
	VBROADCASTSD 24(R8), Z19  // −1
	VBROADCASTSD 32(R8), Z20  // 1
	VBROADCASTSD 40(R8), Z21  // 0.5
	VBROADCASTSD 48(R8), Z22  // C0
	VBROADCASTSD 56(R8), Z23  // C1
	VBROADCASTSD 64(R8), Z24  // C2
	VBROADCASTSD 72(R8), Z25  // C3
	VBROADCASTSD 80(R8), Z26  // C4
	VBROADCASTSD 88(R8), Z27  // C5
	VBROADCASTSD 96(R8), Z28  // C6
	VBROADCASTSD 104(R8), Z29 // C7
	VBROADCASTSD 112(R8), Z30 // C8
	VBROADCASTSD 120(R8), Z31 // C9
	VBROADCASTSD 128(R8), Z13 // C10
	VBROADCASTSD 136(R8), Z14 // C11
	VBROADCASTSD 144(R8), Z15 // C12
	VPBROADCASTQ 152(R8), Z12 // sign bit

preloop:
	VCVTPS2PD (SI), Z0       // v
	VPANDNQ   Z0, Z12, Z1    // |v|
	VMULPD    Z16, Z1, Z1    // |v|·c1
	VADDPD    Z20, Z1, Z1    // 1 + |v|·c1
	VDIVPD    Z1, Z20, Z2    // t = 1/(1 + |v|·c1)
	VMOVUPD   Z2, (DI)
	VMULPD    Z17, Z2, Z3    // t·k1
	VSUBPD    Z18, Z3, Z3    // t·k1 − k2
	VMAXPD    Z3, Z19, Z3    // u = max(·, −1), NaN kept
	VMULPD    Z3, Z3, Z4     // u2
	VMULPD    Z4, Z4, Z5     // u4
	VMULPD    Z23, Z3, Z6    // C1·u
	VADDPD    Z22, Z6, Z6    // C0 + C1·u
	VMULPD    Z25, Z3, Z7    // C3·u
	VADDPD    Z24, Z7, Z7    // C2 + C3·u
	VMULPD    Z4, Z7, Z7     // (C2 + C3·u)·u2
	VADDPD    Z7, Z6, Z6     // a
	VMULPD    Z27, Z3, Z8    // C5·u
	VADDPD    Z26, Z8, Z8    // C4 + C5·u
	VMULPD    Z29, Z3, Z9    // C7·u
	VADDPD    Z28, Z9, Z9    // C6 + C7·u
	VMULPD    Z4, Z9, Z9     // (C6 + C7·u)·u2
	VADDPD    Z9, Z8, Z8     // b
	VMULPD    Z5, Z8, Z8     // b·u4
	VADDPD    Z8, Z6, Z6     // a + b·u4
	VMULPD    Z31, Z3, Z10   // C9·u
	VADDPD    Z30, Z10, Z10  // C8 + C9·u
	VMULPD    Z14, Z3, Z11   // C11·u
	VADDPD    Z13, Z11, Z11  // C10 + C11·u
	VMULPD    Z4, Z11, Z11   // (C10 + C11·u)·u2
	VADDPD    Z11, Z10, Z10  // (C8 + C9·u) + (C10 + C11·u)·u2
	VMULPD    Z15, Z5, Z11   // C12·u4
	VADDPD    Z11, Z10, Z10  // c
	VMULPD    Z5, Z5, Z11    // u4·u4
	VMULPD    Z11, Z10, Z10  // c·(u4·u4)
	VADDPD    Z10, Z6, Z6    // q
	VMULPD    Z0, Z0, Z7     // v·v
	VMULPD    Z21, Z7, Z7    // 0.5·(v·v)
	VSUBPD    Z7, Z6, Z6     // q − 0.5·(v·v)
	VMOVUPD   Z6, (BX)
	ADDQ      $32, SI
	ADDQ      $64, DI
	ADDQ      $64, BX
	DECQ      CX
	JNZ       preloop
	VZEROUPPER

predone:
	RET

// func geluPostAVX512(dst, x *float32, t, e *float64, n int, c *[20]float64)
TEXT ·geluPostAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ t+16(FP), BX
	MOVQ e+24(FP), DX
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), R8
	SHRQ $3, CX
	JZ   postdone
	VBROADCASTSD 32(R8), Z20  // 1
	VBROADCASTSD 40(R8), Z21  // 0.5
	VPBROADCASTQ 152(R8), Z12 // sign bit

postloop:
	VCVTPS2PD (SI), Z0       // v
	VMOVUPD   (BX), Z1       // t
	VMULPD    Z21, Z1, Z1    // 0.5·t
	VMULPD    (DX), Z1, Z1   // c = 0.5·t·e
	VSUBPD    Z1, Z20, Z2    // 1 − c
	VPTESTMQ  Z12, Z0, K1    // v's sign bit set
	VMOVAPD   Z1, K1, Z2     // c there (0 + 1·c: c is +0, positive or NaN)
	VMULPD    Z2, Z0, Z2     // v·Φ(v)
	VCVTPD2PS Z2, Y3
	VMOVUPS   Y3, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	ADDQ      $64, BX
	ADDQ      $64, DX
	DECQ      CX
	JNZ       postloop
	VZEROUPPER

postdone:
	RET

// GeluGrad32's kernels, with geluGradConsts (c): −0.5, 0.5, 1, +Inf,
// 1/√(2π), the sign bit.

// func geluGradPreAVX512(e *float64, x *float32, n int, c *[6]float64)
TEXT ·geluGradPreAVX512(SB), NOSPLIT, $0-32
	MOVQ e+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ c+24(FP), R8
	SHRQ $3, CX
	JZ   gpredone
	VBROADCASTSD 0(R8), Z16 // −0.5

gpreloop:
	VCVTPS2PD (SI), Z0      // v
	VMULPD    Z0, Z0, Z1    // v·v
	VMULPD    Z16, Z1, Z1   // −0.5·(v·v)
	VMOVUPD   Z1, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       gpreloop
	VZEROUPPER

gpredone:
	RET

// func geluGradPostAVX512(dst, x, y, gy *float32, e *float64, n int, c *[6]float64)
TEXT ·geluGradPostAVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), BX
	MOVQ gy+24(FP), DX
	MOVQ e+32(FP), R9
	MOVQ n+40(FP), CX
	MOVQ c+48(FP), R8
	SHRQ $3, CX
	JZ   gpostdone
	VBROADCASTSD 8(R8), Z17  // 0.5
	VBROADCASTSD 16(R8), Z18 // 1
	VBROADCASTSD 24(R8), Z19 // +Inf
	VBROADCASTSD 32(R8), Z20 // 1/√(2π)
	VPBROADCASTQ 40(R8), Z21 // sign bit
	VPXORQ       Z22, Z22, Z22 // 0

gpostloop:
	VCVTPS2PD (SI), Z0       // f
	VCVTPS2PD (BX), Z1       // y
	VDIVPD    Z0, Z1, Z2     // p = y/f
	VCMPPD    $0, Z22, Z0, K1 // f == 0 (ordered)
	VMOVAPD   Z17, K1, Z2    // p = ½ there
	VPANDNQ   Z0, Z21, Z3    // |f|
	VCMPPD    $0, Z19, Z3, K2 // |f| == +Inf
	VMOVAPD   Z22, K2, Z2    // p = 0 there (f = −Inf) ...
	VCMPPD    $30, Z22, Z0, K3 // f > 0 (ordered)
	KANDW     K2, K3, K3
	VMOVAPD   Z18, K3, Z2    // ... and 1 where f = +Inf
	VMULPD    (R9), Z0, Z3   // f·e
	VMULPD    Z20, Z3, Z3    // f·e·(1/√(2π))
	VADDPD    Z3, Z2, Z2     // p + ·
	VCVTPS2PD (DX), Z4       // g
	VMULPD    Z2, Z4, Z2     // g·(p + ·)
	VCVTPD2PS Z2, Y3
	VMOVUPS   Y3, (DI)
	ADDQ      $32, SI
	ADDQ      $32, BX
	ADDQ      $32, DX
	ADDQ      $32, DI
	ADDQ      $64, R9
	DECQ      CX
	JNZ       gpostloop
	VZEROUPPER

gpostdone:
	RET
