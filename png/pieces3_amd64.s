#include "textflag.h"

// The Newton steps' evaluation for three tasks (boxCols.pieces3) as an
// AVX-512F kernel: pieces2AVX512's with a third row, eight weights a
// step, one float64 lane each, the Go loop's operations in its order (no
// FMA): s = 0 + λ0·c0 + λ1·c1 + λ2·c2, u = x + p·s clipped as there, the
// piece s·u − (u−x)²/(2p), c_i·u, and the Hessian's nine products of the
// free weights (merge-masked adds).

// Offsets in pieces3Args.
#define L0 0
#define L1 8
#define L2 16
#define LANES 24
#define CLIPPED 856

// func pieces3AVX512(a *pieces3Args, j0, j1, j2, x, p, r *float32, n int)
TEXT ·pieces3AVX512(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), R8
	MOVQ j0+8(FP), AX
	MOVQ j1+16(FP), BX
	MOVQ j2+24(FP), R10
	MOVQ x+32(FP), SI
	MOVQ p+40(FP), DX
	MOVQ r+48(FP), R9
	MOVQ n+56(FP), CX
	MOVQ $0x8000000000000000, R11
	VPBROADCASTQ R11, Z30 // sign
	VBROADCASTSD L0(R8), Z23
	VBROADCASTSD L1(R8), Z24
	VBROADCASTSD L2(R8), Z25
	VPXORQ Z26, Z26, Z26 // 0
	VPXORQ Z10, Z10, Z10 // h
	VPXORQ Z11, Z11, Z11 // g0
	VPXORQ Z12, Z12, Z12 // g1
	VPXORQ Z13, Z13, Z13 // g2
	VPXORQ Z14, Z14, Z14 // H00
	VPXORQ Z15, Z15, Z15 // H01
	VPXORQ Z16, Z16, Z16 // H02
	VPXORQ Z17, Z17, Z17 // H10
	VPXORQ Z18, Z18, Z18 // H11
	VPXORQ Z19, Z19, Z19 // H12
	VPXORQ Z20, Z20, Z20 // H20
	VPXORQ Z21, Z21, Z21 // H21
	VPXORQ Z22, Z22, Z22 // H22
	XORQ   R13, R13 // clipped
	SHRQ $3, CX
	JZ   done

loop:
	VCVTPS2PD (AX), Z0     // c0
	VCVTPS2PD (BX), Z1     // c1
	VCVTPS2PD (R10), Z2    // c2
	VMULPD    Z23, Z0, Z6  // λ0·c0
	VADDPD    Z6, Z26, Z6  // s = 0 + λ0·c0
	VMULPD    Z24, Z1, Z8  // λ1·c1
	VADDPD    Z8, Z6, Z6
	VMULPD    Z25, Z2, Z8  // λ2·c2
	VADDPD    Z8, Z6, Z6
	VCVTPS2PD (SI), Z3     // x
	VCVTPS2PD (DX), Z4     // p
	VCVTPS2PD (R9), Z5     // r
	VMULPD    Z6, Z4, Z7   // p·s
	VADDPD    Z7, Z3, Z7   // u = x + p·s
	VPXORQ    Z30, Z5, Z27 // −r
	VCMPPD    $0x1e, Z5, Z7, K1  // u > r
	VCMPPD    $0x11, Z27, Z7, K2 // u < −r
	VMOVAPD   Z27, K2, Z7  // u = −r
	VMOVAPD   Z5, K1, Z7   // u = r
	KORW      K1, K2, K3   // clipped
	KNOTW     K3, K4       // free
	KMOVW     K3, R12
	POPCNTL   R12, R12
	ADDQ      R12, R13
	VSUBPD    Z3, Z7, Z8   // dd = u − x
	VMULPD    Z8, Z8, Z8   // dd·dd
	VADDPD    Z4, Z4, Z9   // 2p
	VDIVPD    Z9, Z8, Z8   // dd·dd/(2p)
	VMULPD    Z7, Z6, Z9   // s·u
	VSUBPD    Z8, Z9, Z9
	VADDPD    Z9, Z10, Z10 // h
	VMULPD    Z7, Z0, Z8   // c0·u
	VADDPD    Z8, Z11, Z11
	VMULPD    Z7, Z1, Z8   // c1·u
	VADDPD    Z8, Z12, Z12
	VMULPD    Z7, Z2, Z8   // c2·u
	VADDPD    Z8, Z13, Z13
	VMULPD    Z0, Z4, Z29   // a0 = p·c0
	VMULPD    Z0, Z29, Z8   // a0·c0
	VADDPD    Z8, Z14, K4, Z14
	VMULPD    Z1, Z29, Z8   // a0·c1
	VADDPD    Z8, Z15, K4, Z15
	VMULPD    Z2, Z29, Z8   // a0·c2
	VADDPD    Z8, Z16, K4, Z16
	VMULPD    Z1, Z4, Z29   // a1 = p·c1
	VMULPD    Z0, Z29, Z8   // a1·c0
	VADDPD    Z8, Z17, K4, Z17
	VMULPD    Z1, Z29, Z8   // a1·c1
	VADDPD    Z8, Z18, K4, Z18
	VMULPD    Z2, Z29, Z8   // a1·c2
	VADDPD    Z8, Z19, K4, Z19
	VMULPD    Z2, Z4, Z29   // a2 = p·c2
	VMULPD    Z0, Z29, Z8   // a2·c0
	VADDPD    Z8, Z20, K4, Z20
	VMULPD    Z1, Z29, Z8   // a2·c1
	VADDPD    Z8, Z21, K4, Z21
	VMULPD    Z2, Z29, Z8   // a2·c2
	VADDPD    Z8, Z22, K4, Z22
	ADDQ      $32, AX
	ADDQ      $32, BX
	ADDQ      $32, R10
	ADDQ      $32, SI
	ADDQ      $32, DX
	ADDQ      $32, R9
	DECQ      CX
	JNZ       loop

done:
	VMOVUPD Z10, LANES(R8)
	VMOVUPD Z11, LANES+64(R8)
	VMOVUPD Z12, LANES+128(R8)
	VMOVUPD Z13, LANES+192(R8)
	VMOVUPD Z14, LANES+256(R8)
	VMOVUPD Z15, LANES+320(R8)
	VMOVUPD Z16, LANES+384(R8)
	VMOVUPD Z17, LANES+448(R8)
	VMOVUPD Z18, LANES+512(R8)
	VMOVUPD Z19, LANES+576(R8)
	VMOVUPD Z20, LANES+640(R8)
	VMOVUPD Z21, LANES+704(R8)
	VMOVUPD Z22, LANES+768(R8)
	MOVQ    R13, CLIPPED(R8)
	VZEROUPPER
	RET
