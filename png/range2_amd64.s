#include "textflag.h"

// boxRange2's AVX-512F kernel: a round of the box dual on two tasks
// with a metric, eight columns a step, one float64 lane each: every
// weight's piece of h at the centre summed per lane, and its ρ bin
// stored (one byte a weight). Per lane the Go loop's operations in its
// order (no FMA): u = x + p·(λ0·j0 + λ1·j1), its clip VMINPD(r, u) then
// VMAXPD(−r, ·) with u second, the free test on the bits (VPCMPEQQ), the
// selections by masked moves, and the bin's integer arithmetic on the
// 64-bit lanes, each bin stored and counted: the same bins and clip decisions as the Go loop wherever
// u is not NaN. Go's min ORs its two operand orders' MINSD, which gives a
// NaN u's bits OR r's: the kernel ORs them in too, so that a NaN u is
// clipped and its NaN reaches the sums as in Go (which NaN an operation
// returns depends on its operands' order: the bits of a NaN u, and so
// its clip decision, may still differ). Constrain rejects the NaN or
// infinite J or prop a NaN u comes from before this pass.

// Offsets in box2Args.
#define L0 0
#define L1 8
#define W0 16
#define W1 24
#define LANES 32
#define CLIPPED 416

// func range2AVX512(a *box2Args, j0, j1, p, r, x *float32, bins *uint8, n int, hist *[boxHists][boxBins]uint32)
TEXT ·range2AVX512(SB), NOSPLIT, $0-72
	MOVQ a+0(FP), R8
	MOVQ j0+8(FP), AX
	MOVQ j1+16(FP), BX
	MOVQ p+24(FP), SI
	MOVQ r+32(FP), DX
	MOVQ x+40(FP), DI
	MOVQ bins+48(FP), R13
	MOVQ n+56(FP), CX
	MOVQ hist+64(FP), R10
	MOVQ $0x7fffffffffffffff, R11
	VPBROADCASTQ R11, Z31 // |·|
	MOVQ $0x000fffffffffffff, R11
	VPBROADCASTQ R11, Z30 // significand
	VBROADCASTSD L0(R8), Z29
	VBROADCASTSD L1(R8), Z28
	VBROADCASTSD W0(R8), Z27
	VBROADCASTSD W1(R8), Z26
	MOVQ $0x4000000000000000, R11
	VPBROADCASTQ R11, Z25 // 2.0
	MOVQ $1, R11
	VPBROADCASTQ R11, Z24
	MOVQ $127, R11
	VPBROADCASTQ R11, Z23
	MOVQ $-126, R11
	VPBROADCASTQ R11, Z22
	MOVQ $0x7ff, R11
	VPBROADCASTQ R11, Z21
	MOVQ $255, R11
	VPBROADCASTQ R11, Z20
	MOVQ $0x8000000000000000, R11
	VPBROADCASTQ R11, Z19 // sign
	VPXORQ Z10, Z10, Z10 // A00
	VPXORQ Z11, Z11, Z11 // A10
	VPXORQ Z12, Z12, Z12 // A11
	VPXORQ Z13, Z13, Z13 // b0
	VPXORQ Z14, Z14, Z14 // b1
	VPXORQ Z15, Z15, Z15 // c0
	XORQ   R9, R9        // clipped
	SHRQ   $3, CX
	JZ     done

loop:
	VCVTPS2PD (AX), Z0 // j0
	VCVTPS2PD (BX), Z1 // j1
	VCVTPS2PD (DX), Z2 // r
	VCVTPS2PD (SI), Z3 // p
	VCVTPS2PD (DI), Z4 // x
	VMULPD    Z29, Z0, Z5 // λ0·j0
	VMULPD    Z28, Z1, Z6 // λ1·j1
	VADDPD    Z6, Z5, Z5
	VMULPD    Z5, Z3, Z5  // p·(…)
	VADDPD    Z5, Z4, Z5  // u = x + p·(…)
	VPXORQ    Z19, Z2, Z6 // −r
	VMINPD    Z5, Z2, Z7
	VMAXPD    Z7, Z6, Z7  // uc = max(−r, min(r, u))
	VCMPPD    $3, Z5, Z5, K2 // u NaN: Go's min ORs r's bits into it
	VPORQ     Z2, Z7, K2, Z7
	VPCMPEQQ  Z7, Z5, K1  // free: uc's bits are u's
	KMOVW     K1, R12
	POPCNTL   R12, R12
	ADDQ      $8, R9
	SUBQ      R12, R9
	KNOTW     K1, K2      // clipped
	VMOVAPD   Z7, Z8
	VMOVAPD   Z4, K1, Z8  // y = x where free, else uc
	VMOVAPD.Z Z3, K1, Z9  // pf = p where free, else +0
	VSUBPD    Z4, Z7, Z16 // uc − x
	VMOVAPD.Z Z16, K2, Z16 // dd = uc − x where clipped, else +0
	VMULPD    Z0, Z9, Z17 // pf·j0
	VMULPD    Z0, Z17, Z17
	VADDPD    Z17, Z10, Z10
	VMULPD    Z1, Z9, Z9  // pf·j1
	VMULPD    Z0, Z9, Z17
	VADDPD    Z17, Z11, Z11
	VMULPD    Z1, Z9, Z9
	VADDPD    Z9, Z12, Z12
	VMULPD    Z0, Z8, Z17 // y·j0
	VADDPD    Z17, Z13, Z13
	VMULPD    Z1, Z8, Z17 // y·j1
	VADDPD    Z17, Z14, Z14
	VMULPD    Z16, Z16, Z16 // dd·dd
	VMULPD    Z25, Z3, Z17  // 2·p
	VDIVPD    Z17, Z16, Z16
	VSUBPD    Z16, Z15, Z15 // c0 −= dd·dd/(2p)

	// The bin of ρ = ||u| − r| / (p·(|j0|·w0 + |j1|·w1)) (boxRatioBin).
	VPANDQ    Z31, Z5, Z8   // |u|
	VSUBPD    Z2, Z8, Z8    // |u| − r
	VPANDQ    Z31, Z8, Z8   // db
	VPANDQ    Z31, Z0, Z9
	VMULPD    Z27, Z9, Z9   // |j0|·w0
	VPANDQ    Z31, Z1, Z16
	VMULPD    Z26, Z16, Z16 // |j1|·w1
	VADDPD    Z16, Z9, Z9
	VMULPD    Z9, Z3, Z9    // qb = p·(…)
	VPSRLQ    $52, Z8, Z16  // de
	VPSRLQ    $52, Z9, Z17  // qe
	VPANDQ    Z30, Z9, Z18
	VPANDQ    Z30, Z8, Z6
	VPSUBQ    Z6, Z18, Z18
	VPSUBQ    Z24, Z18, Z18
	VPSRLQ    $63, Z18, Z18 // 1 where du's significand ≥ q's
	VPSUBQ    Z17, Z16, Z6
	VPADDQ    Z18, Z6, Z6   // e
	VPTESTNMQ Z17, Z17, K3  // qe = 0
	VPSUBQ    Z24, Z16, K3, Z6 // e = de − 1 there
	VPMINSQ   Z23, Z6, Z6
	VPMAXSQ   Z22, Z6, Z6
	VPADDQ    Z23, Z6, Z6   // bin = max(−126, min(127, e)) + 127
	VPTESTNMQ Z16, Z16, K3  // de = 0
	VPCMPEQQ  Z21, Z17, K4  // qe = 0x7ff
	KORW      K3, K4, K3
	VPXORQ    Z6, Z6, K3, Z6 // bin 0 there
	VPTESTNMQ Z9, Z9, K3    // qb = 0
	VPCMPEQQ  Z21, Z16, K4  // de = 0x7ff
	KORW      K3, K4, K3
	VMOVDQA64 Z20, K3, Z6   // bin 255 there
	VPMOVQB   Z6, (R13)

	// Count the eight bins, four counts a bin taken in turn.
	MOVQ    (R13), R14
	MOVBQZX R14, R15
	INCL    (R10)(R15*4)
	SHRQ    $8, R14
	MOVBQZX R14, R15
	INCL    1024(R10)(R15*4)
	SHRQ    $8, R14
	MOVBQZX R14, R15
	INCL    2048(R10)(R15*4)
	SHRQ    $8, R14
	MOVBQZX R14, R15
	INCL    3072(R10)(R15*4)
	SHRQ    $8, R14
	MOVBQZX R14, R15
	INCL    (R10)(R15*4)
	SHRQ    $8, R14
	MOVBQZX R14, R15
	INCL    1024(R10)(R15*4)
	SHRQ    $8, R14
	MOVBQZX R14, R15
	INCL    2048(R10)(R15*4)
	SHRQ    $8, R14
	INCL    3072(R10)(R14*4)

	ADDQ $32, AX
	ADDQ $32, BX
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	ADDQ $8, R13
	DECQ CX
	JNZ  loop

done:
	VMOVUPD Z10, LANES(R8)
	VMOVUPD Z11, LANES+64(R8)
	VMOVUPD Z12, LANES+128(R8)
	VMOVUPD Z13, LANES+192(R8)
	VMOVUPD Z14, LANES+256(R8)
	VMOVUPD Z15, LANES+320(R8)
	MOVQ    R9, CLIPPED(R8)
	VZEROUPPER
	RET
