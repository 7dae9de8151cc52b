#include "textflag.h"

// boxExtras2's AVX-512F kernel: the two-task sums a pass of the box dual
// is asked beside its pieces (Σ|J_ic|·R_c, Σ R_c·|J_cᵀd|, the min-norm
// update's rates within the box, the weights the unbounded update leaves
// out of it), eight columns a step, one float64 lane each. Per lane the
// Go loop's operations in its order (no FMA). The clip max(−r, min(r, u))
// is VMINPD then VMAXPD with u second: Go's bits for every u but NaN
// (Go's min ORs two MINSDs, which ORs r's bits into a NaN u, and which
// NaN an operation returns depends on its operands' order). A NaN u
// comes only from a NaN or infinite J or prop, which Constrain rejects
// before (K is not finite). A product masked to 0 on the bits in Go is
// left out of its sum here.

// Offsets in extras2Args.
#define L0 0
#define L1 8
#define D0 16
#define D1 24
#define O0 32
#define O1 40
#define SCALE 48
#define FLAGS 56
#define LANES 64
#define OUT 384
#define QC 392

// func extras2AVX512(a *extras2Args, j0, j1, p, r, x *float32, n int)
TEXT ·extras2AVX512(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), R8
	MOVQ j0+8(FP), AX
	MOVQ j1+16(FP), BX
	MOVQ p+24(FP), SI
	MOVQ r+32(FP), DX
	MOVQ x+40(FP), DI
	MOVQ n+48(FP), CX
	MOVQ FLAGS(R8), R10
	MOVQ $0x7fffffffffffffff, R11
	VPBROADCASTQ R11, Z31 // |·| mask
	MOVQ $0x8000000000000000, R11
	VPBROADCASTQ R11, Z30 // sign
	VBROADCASTSD L0(R8), Z29
	VBROADCASTSD L1(R8), Z28
	VBROADCASTSD D0(R8), Z27
	VBROADCASTSD D1(R8), Z26
	VBROADCASTSD O0(R8), Z25
	VBROADCASTSD O1(R8), Z24
	VBROADCASTSD SCALE(R8), Z23
	VPXORQ Z10, Z10, Z10 // Σ|J_0c|·R_c
	VPXORQ Z11, Z11, Z11 // Σ|J_1c|·R_c
	VPXORQ Z12, Z12, Z12 // Σ R_c·|J_cᵀd|
	VPXORQ Z13, Z13, Z13 // min-norm rate 0
	VPXORQ Z14, Z14, Z14 // min-norm rate 1
	XORQ R9, R9          // weights out of the box
	KXORW K7, K7, K7     // lanes where the min-norm update was clipped
	SHRQ $3, CX
	JZ   done

loop:
	VCVTPS2PD (AX), Z0 // j0
	VCVTPS2PD (BX), Z1 // j1
	VCVTPS2PD (DX), Z2 // r
	VCVTPS2PD (SI), Z3 // p
	VPXORQ    Z30, Z2, Z6 // −r

	TESTQ $8, R10
	JZ    nolam
	VMULPD    Z29, Z0, Z4 // l0·j0
	VMULPD    Z28, Z1, Z5 // l1·j1
	VADDPD    Z5, Z4, Z4
	VMULPD    Z4, Z3, Z4  // p·(…)
	VCVTPS2PD (DI), Z5    // x
	VADDPD    Z4, Z5, Z4  // u = x + p·(…)
	VMINPD    Z4, Z2, Z7  // min(r, u)
	VMAXPD    Z7, Z6, Z7  // max(−r, ·)
	VPCMPQ    $4, Z7, Z4, K1 // u's bits ≠ the clipped u's
	KMOVW     K1, R12
	POPCNTL   R12, R12
	ADDQ      R12, R9
	ADDQ      $32, DI

nolam:
	TESTQ $1, R10
	JZ    notop
	VPANDQ   Z31, Z0, Z4 // |j0|
	VMULPD   Z2, Z4, Z4  // |j0|·r
	VPTESTMQ Z31, Z0, K1 // j0 ≠ 0
	VADDPD   Z4, Z10, K1, Z10
	VPANDQ   Z31, Z1, Z5
	VMULPD   Z2, Z5, Z5
	VPTESTMQ Z31, Z1, K2
	VADDPD   Z5, Z11, K2, Z11

notop:
	TESTQ $2, R10
	JZ    nod
	VMULPD   Z27, Z0, Z4 // d0·j0
	VMULPD   Z26, Z1, Z5 // d1·j1
	VADDPD   Z5, Z4, Z4  // ds
	VPANDQ   Z31, Z4, Z5 // |ds|
	VMULPD   Z5, Z2, Z5  // r·|ds|
	VPTESTMQ Z31, Z4, K1 // ds ≠ 0
	VADDPD   Z5, Z12, K1, Z12

nod:
	TESTQ $4, R10
	JZ    next
	VMULPD Z25, Z0, Z4 // o0·j0
	VMULPD Z24, Z1, Z5 // o1·j1
	VADDPD Z5, Z4, Z4
	VMULPD Z4, Z3, Z4  // p·(…)
	VMULPD Z4, Z23, Z4 // um = scale·(…)
	VMINPD Z4, Z2, Z7
	VMAXPD Z7, Z6, Z7  // umc
	VPCMPQ $4, Z7, Z4, K1
	KORW   K1, K7, K7
	VMULPD Z7, Z0, Z5  // j0·umc
	VADDPD Z5, Z13, Z13
	VMULPD Z7, Z1, Z5  // j1·umc
	VADDPD Z5, Z14, Z14

next:
	ADDQ $32, AX
	ADDQ $32, BX
	ADDQ $32, SI
	ADDQ $32, DX
	DECQ CX
	JNZ  loop

done:
	VMOVUPD Z10, LANES(R8)
	VMOVUPD Z11, LANES+64(R8)
	VMOVUPD Z12, LANES+128(R8)
	VMOVUPD Z13, LANES+192(R8)
	VMOVUPD Z14, LANES+256(R8)
	MOVQ    R9, OUT(R8)
	KMOVW   K7, R12
	MOVQ    R12, QC(R8)
	VZEROUPPER
	RET
