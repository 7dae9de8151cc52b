#include "textflag.h"

// The Newton steps' evaluation (boxCols.pieces2) as an AVX-512F kernel:
// the pieces of h, ∇h and the Hessian of two tasks' copied weights, eight
// weights a step, one float64 lane each, with the Go loop's operations
// in its order (no FMA): s = 0 + λ0·c0 + λ1·c1, u = x + p·s, clipped to
// r where u > r and to −r where u < −r (the compares on u before either
// store, r's last, as Go's if-else), the piece s·u − (u−x)²/(2p) (2p as
// p + p: the same bits), c_i·u, and the Hessian's four products of the
// free weights (merge-masked adds: a clipped weight adds nothing).

// Offsets in pieces2Args.
#define L0 0
#define L1 8
#define LANES 16
#define CLIPPED 464

// func pieces2AVX512(a *pieces2Args, j0, j1, x, p, r *float32, n int)
TEXT ·pieces2AVX512(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), R8
	MOVQ j0+8(FP), AX
	MOVQ j1+16(FP), BX
	MOVQ x+24(FP), SI
	MOVQ p+32(FP), DX
	MOVQ r+40(FP), R9
	MOVQ n+48(FP), CX
	MOVQ $0x8000000000000000, R11
	VPBROADCASTQ R11, Z30 // sign
	VBROADCASTSD L0(R8), Z20
	VBROADCASTSD L1(R8), Z21
	VPXORQ Z22, Z22, Z22 // 0
	VPXORQ Z10, Z10, Z10 // h
	VPXORQ Z11, Z11, Z11 // g0
	VPXORQ Z12, Z12, Z12 // g1
	VPXORQ Z13, Z13, Z13 // H00
	VPXORQ Z14, Z14, Z14 // H01
	VPXORQ Z15, Z15, Z15 // H10
	VPXORQ Z16, Z16, Z16 // H11
	XORQ   R13, R13      // clipped
	SHRQ $3, CX
	JZ   done

loop:
	VCVTPS2PD (AX), Z0     // c0
	VCVTPS2PD (BX), Z1     // c1
	VMULPD    Z20, Z0, Z5  // λ0·c0
	VADDPD    Z5, Z22, Z5  // s = 0 + λ0·c0
	VMULPD    Z21, Z1, Z7  // λ1·c1
	VADDPD    Z7, Z5, Z5   // s += λ1·c1
	VCVTPS2PD (SI), Z2     // x
	VCVTPS2PD (DX), Z3     // p
	VCVTPS2PD (R9), Z4     // r
	VMULPD    Z5, Z3, Z6   // p·s
	VADDPD    Z6, Z2, Z6   // u = x + p·s
	VPXORQ    Z30, Z4, Z8  // −r
	VCMPPD    $0x1e, Z4, Z6, K1 // u > r
	VCMPPD    $0x11, Z8, Z6, K2 // u < −r
	VMOVAPD   Z8, K2, Z6   // u = −r
	VMOVAPD   Z4, K1, Z6   // u = r
	KORW      K1, K2, K3   // clipped
	KNOTW     K3, K4       // free
	KMOVW     K3, R12
	POPCNTL   R12, R12
	ADDQ      R12, R13
	VSUBPD    Z2, Z6, Z7   // dd = u − x
	VMULPD    Z7, Z7, Z7   // dd·dd
	VADDPD    Z3, Z3, Z9   // 2p
	VDIVPD    Z9, Z7, Z7   // dd·dd/(2p)
	VMULPD    Z6, Z5, Z8   // s·u
	VSUBPD    Z7, Z8, Z8
	VADDPD    Z8, Z10, Z10 // h
	VMULPD    Z6, Z0, Z7   // c0·u
	VADDPD    Z7, Z11, Z11
	VMULPD    Z6, Z1, Z7   // c1·u
	VADDPD    Z7, Z12, Z12
	VMULPD    Z0, Z3, Z7   // a0 = p·c0
	VMULPD    Z0, Z7, Z8   // a0·c0
	VADDPD    Z8, Z13, K4, Z13
	VMULPD    Z1, Z7, Z8   // a0·c1
	VADDPD    Z8, Z14, K4, Z14
	VMULPD    Z1, Z3, Z7   // a1 = p·c1
	VMULPD    Z0, Z7, Z8   // a1·c0
	VADDPD    Z8, Z15, K4, Z15
	VMULPD    Z1, Z7, Z8   // a1·c1
	VADDPD    Z8, Z16, K4, Z16
	ADDQ      $32, AX
	ADDQ      $32, BX
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
	MOVQ    R13, CLIPPED(R8)
	VZEROUPPER
	RET
