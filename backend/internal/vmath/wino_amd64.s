#include "textflag.h"

// The Winograd F(2×2, 3×3) tile transforms on 8 tiles a step (AVX2), with
// the operations of winoInputGo, winoOutputGo and winoGradGo in the same
// order: the same bits.

// DEINT(off, base, E, O) loads the 16 values at off(base) and writes their
// even elements into E and their odd elements into O (Y14, Y15 scratch).
#define DEINT(off, base, E, O) \
	VMOVUPS off(base), Y14 \
	VMOVUPS off+32(base), Y15 \
	VSHUFPS $0x88, Y15, Y14, E \
	VSHUFPS $0xDD, Y15, Y14, O \
	VPERMPD $0xD8, E, E \
	VPERMPD $0xD8, O, O

// ROW(base, C0, C1, C2, C3): the columns 2t, 2t+1, 2t+2, 2t+3 of the
// padded row at base for the 8 tiles t.
#define ROW(base, C0, C1, C2, C3) \
	DEINT(0, base, C0, C1) \
	DEINT(8, base, C2, C3)

// STORE4(base, A, B, C, D) stores A…D into the planes base, base+stride,
// base+2·stride and base+3·stride (R9 the stride, R10 three of them).
#define STORE4(base, A, B, C, D) \
	VMOVUPS A, (base) \
	VMOVUPS B, (base)(R9*1) \
	VMOVUPS C, (base)(R9*2) \
	VMOVUPS D, (base)(R10*1)

// ROWPASS(base): the row x = Y8…Y11 times B, [x0 − x2, x1 + x2, x2 − x1,
// x1 − x3], into four planes from base.
#define ROWPASS(base) \
	VSUBPS Y10, Y8, Y12 \
	VADDPS Y10, Y9, Y13 \
	VSUBPS Y9, Y10, Y14 \
	VSUBPS Y11, Y9, Y15 \
	STORE4(base, Y12, Y13, Y14, Y15)

// ROWPASSM(base): ROWPASS storing only the lanes of the mask at AX.
#define ROWPASSM(base) \
	VSUBPS Y10, Y8, Y12 \
	VADDPS Y10, Y9, Y13 \
	VSUBPS Y9, Y10, Y14 \
	VMOVUPS (AX), Y15 \
	VMASKMOVPS Y12, Y15, (base) \
	VMASKMOVPS Y13, Y15, (base)(R9*1) \
	VMASKMOVPS Y14, Y15, (base)(R9*2) \
	VSUBPS Y11, Y9, Y12 \
	VMASKMOVPS Y12, Y15, (base)(R10*1)

// winoMask<>+32−4k: 8 lanes, the first k of them set (k = 0…8).
DATA winoMask<>+0(SB)/8, $-1
DATA winoMask<>+8(SB)/8, $-1
DATA winoMask<>+16(SB)/8, $-1
DATA winoMask<>+24(SB)/8, $-1
DATA winoMask<>+32(SB)/8, $0
DATA winoMask<>+40(SB)/8, $0
DATA winoMask<>+48(SB)/8, $0
DATA winoMask<>+56(SB)/8, $0
GLOBL winoMask<>(SB), RODATA|NOPTR, $64

// func winoInputAVX2(rows *float32, ld int, dst *float32, stride int, n int)
//
// rows: four zero-padded input rows ld floats apart; the tile t reads
// columns 2t…2t+3 of each. dst: 16 planes stride floats apart, the tile t
// at element t of each. n: any count; the last n mod 8 tiles, as a group
// of 8 whose values past the n-th are not stored, read the rows'
// columns up to 2·⌈n/8⌉·8 + 2 (whatever they hold).
TEXT ·winoInputAVX2(SB), NOSPLIT, $0-40
	MOVQ rows+0(FP), SI
	MOVQ ld+8(FP), DX
	SHLQ $2, DX                  // ld in bytes
	MOVQ dst+16(FP), DI
	MOVQ stride+24(FP), R9
	SHLQ $2, R9                  // stride in bytes
	MOVQ n+32(FP), CX
	MOVQ CX, BX
	ANDQ $7, BX                  // the tail's tiles
	SHRQ $3, CX
	LEAQ (SI)(DX*2), R14         // row 2
	LEAQ (R14)(DX*1), R15        // row 3
	LEAQ (SI)(DX*1), DX          // row 1
	LEAQ (R9)(R9*2), R10         // 3·stride
	LEAQ (DI)(R9*4), R11         // plane 4
	LEAQ (R11)(R9*4), R12        // plane 8
	LEAQ (R12)(R9*4), R13        // plane 12
	TESTQ CX, CX
	JZ   intail
inloop:
	ROW(R14, Y0, Y1, Y2, Y3)     // row 2
	ROW(SI, Y4, Y5, Y6, Y7)      // row 0
	VSUBPS Y0, Y4, Y8            // a = row 0 − row 2
	VSUBPS Y1, Y5, Y9
	VSUBPS Y2, Y6, Y10
	VSUBPS Y3, Y7, Y11
	ROWPASS(DI)
	ROW(DX, Y4, Y5, Y6, Y7)      // row 1
	VADDPS Y0, Y4, Y8            // b = row 1 + row 2
	VADDPS Y1, Y5, Y9
	VADDPS Y2, Y6, Y10
	VADDPS Y3, Y7, Y11
	ROWPASS(R11)
	VSUBPS Y4, Y0, Y8            // e = row 2 − row 1
	VSUBPS Y5, Y1, Y9
	VSUBPS Y6, Y2, Y10
	VSUBPS Y7, Y3, Y11
	ROWPASS(R12)
	ROW(R15, Y0, Y1, Y2, Y3)     // row 3
	VSUBPS Y0, Y4, Y8            // f = row 1 − row 3
	VSUBPS Y1, Y5, Y9
	VSUBPS Y2, Y6, Y10
	VSUBPS Y3, Y7, Y11
	ROWPASS(R13)
	ADDQ $64, SI                 // 8 tiles: 16 columns
	ADDQ $64, DX
	ADDQ $64, R14
	ADDQ $64, R15
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	DECQ CX
	JNZ  inloop
intail:
	TESTQ BX, BX
	JZ   indone
	LEAQ winoMask<>+32(SB), AX
	SHLQ $2, BX
	SUBQ BX, AX                  // the mask of the tail's tiles
	ROW(R14, Y0, Y1, Y2, Y3)     // row 2
	ROW(SI, Y4, Y5, Y6, Y7)      // row 0
	VSUBPS Y0, Y4, Y8
	VSUBPS Y1, Y5, Y9
	VSUBPS Y2, Y6, Y10
	VSUBPS Y3, Y7, Y11
	ROWPASSM(DI)
	ROW(DX, Y4, Y5, Y6, Y7)      // row 1
	VADDPS Y0, Y4, Y8
	VADDPS Y1, Y5, Y9
	VADDPS Y2, Y6, Y10
	VADDPS Y3, Y7, Y11
	ROWPASSM(R11)
	VSUBPS Y4, Y0, Y8
	VSUBPS Y5, Y1, Y9
	VSUBPS Y6, Y2, Y10
	VSUBPS Y7, Y3, Y11
	ROWPASSM(R12)
	ROW(R15, Y0, Y1, Y2, Y3)     // row 3
	VSUBPS Y0, Y4, Y8
	VSUBPS Y1, Y5, Y9
	VSUBPS Y2, Y6, Y10
	VSUBPS Y3, Y7, Y11
	ROWPASSM(R13)
indone:
	VZEROUPPER
	RET

// SU(idx, S, U): for the planes j, 4+j, 8+j, 12+j at idx from SI, R11,
// R12 and R13, S = (m_j + m_4+j) + m_8+j and U = (m_4+j − m_8+j) − m_12+j.
#define SU(idx, S, U) \
	VMOVUPS (SI)idx, S \
	VMOVUPS (R11)idx, Y8 \
	VMOVUPS (R12)idx, Y9 \
	VMOVUPS (R13)idx, Y10 \
	VADDPS Y8, S, S \
	VADDPS Y9, S, S \
	VSUBPS Y9, Y8, U \
	VSUBPS Y10, U, U

// SUM(idx, S, U): SU with the loads masked by Y11 (lanes outside it read
// as 0).
#define SUM(idx, S, U) \
	VMASKMOVPS (SI)idx, Y11, S \
	VMASKMOVPS (R11)idx, Y11, Y8 \
	VMASKMOVPS (R12)idx, Y11, Y9 \
	VMASKMOVPS (R13)idx, Y11, Y10 \
	VADDPS Y8, S, S \
	VADDPS Y9, S, S \
	VSUBPS Y9, Y8, U \
	VSUBPS Y10, U, U

// OUTVALS(S0, S1, S2, S3): the output row [(s0 + s1) + s2 + bias,
// (s1 − s2) − s3 + bias] of the 8 tiles, interleaved, into Y12 (tiles
// 0…3) and Y13 (4…7) (bias in Y15); each value v adds v − v (0, or NaN
// for an infinity or NaN) into Y14.
#define OUTVALS(S0, S1, S2, S3) \
	VADDPS S1, S0, Y8 \
	VADDPS S2, Y8, Y8 \
	VADDPS Y15, Y8, Y8 \
	VSUBPS S2, S1, Y9 \
	VSUBPS S3, Y9, Y9 \
	VADDPS Y15, Y9, Y9 \
	VSUBPS Y8, Y8, Y10 \
	VADDPS Y10, Y14, Y14 \
	VSUBPS Y9, Y9, Y11 \
	VADDPS Y11, Y14, Y14 \
	VUNPCKLPS Y9, Y8, Y10 \
	VUNPCKHPS Y9, Y8, Y11 \
	VPERM2F128 $0x20, Y11, Y10, Y12 \
	VPERM2F128 $0x31, Y11, Y10, Y13

// OUTROW(S0, S1, S2, S3, dst): OUTVALS into 16 values at dst.
#define OUTROW(S0, S1, S2, S3, dst) \
	OUTVALS(S0, S1, S2, S3) \
	VMOVUPS Y12, (dst) \
	VMOVUPS Y13, 32(dst)

// OUTROWM(S0, S1, S2, S3, dst): OUTVALS into the values at dst of the
// masks at BX (the first 8) and R14 (the next 8).
#define OUTROWM(S0, S1, S2, S3, dst) \
	OUTVALS(S0, S1, S2, S3) \
	VMOVUPS (BX), Y10 \
	VMASKMOVPS Y12, Y10, (dst) \
	VMOVUPS (R14), Y10 \
	VMASKMOVPS Y13, Y10, 32(dst)

// func winoOutputAVX2(src *float32, stride int, y0, y1 *float32, n int, bias float32) (nonFinite float32)
//
// src: 16 planes stride floats apart, the tile t at element t of each;
// y0, y1: the two output rows, the tile t at columns 2t and 2t+1. n: any
// count (the last n mod 8 tiles through masked loads and stores). It
// returns the sum of v − v over the values v written: 0 when all are
// finite, NaN otherwise.
TEXT ·winoOutputAVX2(SB), NOSPLIT, $0-52
	MOVQ src+0(FP), SI
	MOVQ stride+8(FP), R9
	SHLQ $2, R9
	MOVQ y0+16(FP), DI
	MOVQ y1+24(FP), DX
	MOVQ n+32(FP), CX
	VBROADCASTSS bias+40(FP), Y15
	VXORPS Y14, Y14, Y14
	MOVQ CX, AX
	ANDQ $7, AX                  // the tail's tiles
	SHRQ $3, CX
	XORQ R8, R8                  // 0: plane j = 0
	LEAQ (R9)(R9*2), R10         // 3·stride
	LEAQ (SI)(R9*4), R11         // plane 4
	LEAQ (R11)(R9*4), R12        // plane 8
	LEAQ (R12)(R9*4), R13        // plane 12
	TESTQ CX, CX
	JZ   outtail
outloop:
	SU((R8*1), Y0, Y4)
	SU((R9*1), Y1, Y5)
	SU((R9*2), Y2, Y6)
	SU((R10*1), Y3, Y7)
	OUTROW(Y0, Y1, Y2, Y3, DI)
	OUTROW(Y4, Y5, Y6, Y7, DX)
	ADDQ $32, SI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $64, DI
	ADDQ $64, DX
	DECQ CX
	JNZ  outloop
outtail:
	TESTQ AX, AX
	JZ   outdone
	LEAQ winoMask<>+32(SB), BX
	MOVQ BX, R14
	MOVQ BX, R15
	SHLQ $2, AX
	SUBQ AX, R15                 // the tail's k tiles (loads)
	VMOVUPS (R15), Y11
	SHLQ $1, AX                  // 2k values a row: min(2k, 8) and 2k − 8 of them
	CMPQ AX, $32
	JLE  outlow
	SUBQ $32, AX
	SUBQ AX, R14
	SUBQ $32, BX
	JMP  outmasks
outlow:
	SUBQ AX, BX
outmasks:
	SUM((R8*1), Y0, Y4)
	SUM((R9*1), Y1, Y5)
	SUM((R9*2), Y2, Y6)
	SUM((R10*1), Y3, Y7)
	OUTROWM(Y0, Y1, Y2, Y3, DI)
	OUTROWM(Y4, Y5, Y6, Y7, DX)
outdone:
	VEXTRACTF128 $1, Y14, X0
	VADDPS X14, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, nonFinite+48(FP)
	RET

DATA winoSign<>+0(SB)/4, $0x80000000
GLOBL winoSign<>(SB), RODATA|NOPTR, $4

// GROUP(P, S, base): [p, p + s, p − s, −s] into four planes from base.
#define GROUP(P, S, base) \
	VADDPS S, P, Y4 \
	VSUBPS S, P, Y5 \
	VXORPS Y13, S, Y6 \
	STORE4(base, P, Y4, Y5, Y6)

// DEINTM(base, E, O): DEINT(0, base, E, O) with the loads masked by Y10
// (the first 8 values) and Y11 (the next 8); lanes outside read as 0.
#define DEINTM(base, E, O) \
	VMASKMOVPS (base), Y10, Y14 \
	VMASKMOVPS 32(base), Y11, Y15 \
	VSHUFPS $0x88, Y15, Y14, E \
	VSHUFPS $0xDD, Y15, Y14, O \
	VPERMPD $0xD8, E, E \
	VPERMPD $0xD8, O, O

// GROUPM(P, S, base): GROUP storing only the lanes of the mask Y9.
#define GROUPM(P, S, base) \
	VADDPS S, P, Y4 \
	VSUBPS S, P, Y5 \
	VXORPS Y13, S, Y6 \
	VMASKMOVPS P, Y9, (base) \
	VMASKMOVPS Y4, Y9, (base)(R9*1) \
	VMASKMOVPS Y5, Y9, (base)(R9*2) \
	VMASKMOVPS Y6, Y9, (base)(R10*1)

// func winoGradAVX2(y0, y1 *float32, dst *float32, stride int, n int)
//
// y0, y1: two rows of the output gradient, the tile t at columns 2t and
// 2t+1; dst: 16 planes stride floats apart, the tile t at element t of
// each. n: any count (the last n mod 8 tiles through masked loads and
// stores).
TEXT ·winoGradAVX2(SB), NOSPLIT, $0-40
	MOVQ y0+0(FP), SI
	MOVQ y1+8(FP), DX
	MOVQ dst+16(FP), DI
	MOVQ stride+24(FP), R9
	SHLQ $2, R9
	MOVQ n+32(FP), CX
	VBROADCASTSS winoSign<>(SB), Y13
	MOVQ CX, AX
	ANDQ $7, AX                  // the tail's tiles
	SHRQ $3, CX
	LEAQ (R9)(R9*2), R10         // 3·stride
	LEAQ (DI)(R9*4), R11         // plane 4
	LEAQ (R11)(R9*4), R12        // plane 8
	LEAQ (R12)(R9*4), R8         // plane 12
	TESTQ CX, CX
	JZ   gradtail
gradloop:
	DEINT(0, SI, Y0, Y1)         // a, b: row 0's even and odd columns
	DEINT(0, DX, Y2, Y3)         // c, d: row 1's
	GROUP(Y0, Y1, DI)            // [a, a+b, a−b, −b]
	VADDPS Y2, Y0, Y7            // a+c, b+d
	VADDPS Y3, Y1, Y8
	GROUP(Y7, Y8, R11)
	VSUBPS Y2, Y0, Y7            // a−c, b−d
	VSUBPS Y3, Y1, Y8
	GROUP(Y7, Y8, R12)
	VXORPS Y13, Y2, Y7           // −c, −d: [−c, −c−d, d−c, d]
	VXORPS Y13, Y3, Y8
	GROUP(Y7, Y8, R8)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R8
	DECQ CX
	JNZ  gradloop
gradtail:
	TESTQ AX, AX
	JZ   graddone
	LEAQ winoMask<>+32(SB), BX
	MOVQ BX, R14
	MOVQ BX, R15
	SHLQ $2, AX
	SUBQ AX, R15                 // the tail's k tiles (stores)
	VMOVUPS (R15), Y9
	SHLQ $1, AX                  // 2k values a row: min(2k, 8) and 2k − 8 of them
	CMPQ AX, $32
	JLE  gradlow
	SUBQ $32, AX
	SUBQ AX, R14
	SUBQ $32, BX
	JMP  gradmasks
gradlow:
	SUBQ AX, BX
gradmasks:
	VMOVUPS (BX), Y10
	VMOVUPS (R14), Y11
	DEINTM(SI, Y0, Y1)
	DEINTM(DX, Y2, Y3)
	GROUPM(Y0, Y1, DI)
	VADDPS Y2, Y0, Y7
	VADDPS Y3, Y1, Y8
	GROUPM(Y7, Y8, R11)
	VSUBPS Y2, Y0, Y7
	VSUBPS Y3, Y1, Y8
	GROUPM(Y7, Y8, R12)
	VXORPS Y13, Y2, Y7
	VXORPS Y13, Y3, Y8
	GROUPM(Y7, Y8, R8)
graddone:
	VZEROUPPER
	RET

// winoLane<>: 0…7, the lanes' filter numbers.
DATA winoLane<>+0(SB)/4, $0
DATA winoLane<>+4(SB)/4, $1
DATA winoLane<>+8(SB)/4, $2
DATA winoLane<>+12(SB)/4, $3
DATA winoLane<>+16(SB)/4, $4
DATA winoLane<>+20(SB)/4, $5
DATA winoLane<>+24(SB)/4, $6
DATA winoLane<>+28(SB)/4, $7
GLOBL winoLane<>(SB), RODATA|NOPTR, $32

DATA winoHalf<>+0(SB)/4, $0x3f000000
GLOBL winoHalf<>(SB), RODATA|NOPTR, $4

// TAP(off, D): tap off/4 of the 8 filters at SI into D (Y15 the filters'
// offsets in floats, Y14 the gather's mask).
#define TAP(off, D) \
	VPCMPEQD Y14, Y14, Y14 \
	VGATHERDPS Y14, off(SI)(Y15*4), D

// FROW(A, B, D, base): the row [a, b, d] times Gᵀ, [a, ((a + b) + d)·½,
// ((a − b) + d)·½, d], into four planes from base (Y13 = ½).
#define FROW(A, B, D, base) \
	VADDPS B, A, Y12 \
	VADDPS D, Y12, Y12 \
	VMULPS Y13, Y12, Y12 \
	VSUBPS B, A, Y14 \
	VADDPS D, Y14, Y14 \
	VMULPS Y13, Y14, Y14 \
	STORE4(base, A, Y12, Y14, D)

// GCOL(J, K, L, T1): the column [g_j, g_3+j, g_6+j] of G·g's rows 1 and
// 2: T1 = ((g_j + g_3+j) + g_6+j)·½, and J becomes ((g_j − g_3+j) +
// g_6+j)·½.
#define GCOL(J, K, L, T1) \
	VADDPS K, J, Y12 \
	VADDPS L, Y12, Y12 \
	VMULPS Y13, Y12, T1 \
	VSUBPS K, J, J \
	VADDPS L, J, J \
	VMULPS Y13, J, J

// func winoFilterAVX2(w *float32, fs int, dst *float32, stride int, n int)
//
// w: n 3×3 filters, 9 floats each, fs floats apart (fs·8 below 2³¹);
// dst: 16 planes stride floats apart, the filter i's value ξ of G·g·Gᵀ
// at element i of each. n: a multiple of 8.
TEXT ·winoFilterAVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ fs+8(FP), DX
	MOVQ dst+16(FP), DI
	MOVQ stride+24(FP), R9
	SHLQ $2, R9
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ   filtdone
	LEAQ (R9)(R9*2), R10         // 3·stride
	LEAQ (DI)(R9*4), R11         // plane 4
	LEAQ (R11)(R9*4), R12        // plane 8
	LEAQ (R12)(R9*4), R13        // plane 12
	MOVQ DX, X15
	VPBROADCASTD X15, Y15
	VPMULLD winoLane<>(SB), Y15, Y15 // the lanes' filters: j·fs
	SHLQ $5, DX                  // 8 filters in bytes
	VBROADCASTSS winoHalf<>(SB), Y13
filtloop:
	TAP(0, Y0)
	TAP(4, Y1)
	TAP(8, Y2)
	TAP(12, Y3)
	TAP(16, Y4)
	TAP(20, Y5)
	TAP(24, Y6)
	TAP(28, Y7)
	TAP(32, Y8)
	FROW(Y0, Y1, Y2, DI)         // G·g's row 0: g's row 0
	FROW(Y6, Y7, Y8, R13)        // row 3: g's row 2
	GCOL(Y0, Y3, Y6, Y9)         // rows 1 (Y9…Y11) and 2 (Y0…Y2)
	GCOL(Y1, Y4, Y7, Y10)
	GCOL(Y2, Y5, Y8, Y11)
	FROW(Y9, Y10, Y11, R11)
	FROW(Y0, Y1, Y2, R12)
	ADDQ DX, SI                  // 8 filters
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	DECQ CX
	JNZ  filtloop
filtdone:
	VZEROUPPER
	RET

DATA winoHalf8<>+0(SB)/8, $0x3f0000003f000000
DATA winoHalf8<>+8(SB)/8, $0x3f0000003f000000
DATA winoHalf8<>+16(SB)/8, $0x3f0000003f000000
DATA winoHalf8<>+24(SB)/8, $0x3f0000003f000000
GLOBL winoHalf8<>(SB), RODATA|NOPTR, $32

// winoCol<>: a filter's first 8 taps in the [9][8] scratch, 8 floats apart.
DATA winoCol<>+0(SB)/4, $0
DATA winoCol<>+4(SB)/4, $8
DATA winoCol<>+8(SB)/4, $16
DATA winoCol<>+12(SB)/4, $24
DATA winoCol<>+16(SB)/4, $32
DATA winoCol<>+20(SB)/4, $40
DATA winoCol<>+24(SB)/4, $48
DATA winoCol<>+28(SB)/4, $56
GLOBL winoCol<>(SB), RODATA|NOPTR, $32

// GTCOL(idx, T0, T1, T2): column idx of Gᵀ·dU from the planes j, 4+j,
// 8+j, 12+j at idx from SI, R11, R12 and R13: with h = (u1 + u2)·½,
// T0 = u0 + h, T1 = (u1 − u2)·½, T2 = h + u3.
#define GTCOL(idx, T0, T1, T2) \
	VMOVUPS (SI)idx, Y12 \
	VMOVUPS (R11)idx, Y13 \
	VMOVUPS (R12)idx, Y14 \
	VMOVUPS (R13)idx, Y15 \
	VADDPS Y14, Y13, T0 \
	VMULPS winoHalf8<>(SB), T0, T0 \
	VSUBPS Y14, Y13, T1 \
	VMULPS winoHalf8<>(SB), T1, T1 \
	VADDPS Y15, T0, T2 \
	VADDPS T0, Y12, T0

// GROWG(A, B, C, D, k): the row [a, b, c, d] times G, with s = (b + c)·½:
// [a + s, (b − c)·½, s + d], into rows k, k+1, k+2 of the [9][8] scratch
// at BX (k in bytes, 32 a row).
#define GROWG(A, B, C, D, k) \
	VADDPS C, B, Y12 \
	VMULPS winoHalf8<>(SB), Y12, Y12 \
	VSUBPS C, B, Y13 \
	VMULPS winoHalf8<>(SB), Y13, Y13 \
	VADDPS Y12, A, Y14 \
	VADDPS D, Y12, Y12 \
	VMOVUPS Y14, k(BX) \
	VMOVUPS Y13, k+32(BX) \
	VMOVUPS Y12, k+64(BX)

// ADDF(j): adds filter j's 9 values of the scratch at BX into its 9 at
// DI, and their sums' v − v into Y11 (Y15 winoCol).
#define ADDF(j) \
	VPCMPEQD Y14, Y14, Y14 \
	VGATHERDPS Y14, (4*j)(BX)(Y15*4), Y0 \
	VMOVUPS (36*j)(DI), Y1 \
	VADDPS Y0, Y1, Y1 \
	VMOVUPS Y1, (36*j)(DI) \
	VSUBPS Y1, Y1, Y2 \
	VADDPS Y2, Y11, Y11 \
	VMOVSS (256+4*j)(BX), X3 \
	VMOVSS (36*j+32)(DI), X4 \
	VADDSS X3, X4, X4 \
	VMOVSS X4, (36*j+32)(DI) \
	VSUBSS X4, X4, X5 \
	VADDPS Y5, Y11, Y11

// func winoFilterGradAVX2(du *float32, stride int, dw *float32, n int, tmp *float32)
//
// du: 16 planes stride floats apart, the filter i's value ξ at element
// i of each; dw: n 3×3 filters, 9 floats each, into which Gᵀ·dU·G is
// added. tmp: 80 floats, a [9][8] scratch and 8 sums of v − v over the
// values of dw written, added to. n: a multiple of 8.
TEXT ·winoFilterGradAVX2(SB), NOSPLIT, $0-40
	MOVQ du+0(FP), SI
	MOVQ stride+8(FP), R9
	SHLQ $2, R9
	MOVQ dw+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ tmp+32(FP), BX
	SHRQ $3, CX
	JZ   fgdone
	XORQ R8, R8                  // 0: column 0
	LEAQ (R9)(R9*2), R10         // 3·stride
	LEAQ (SI)(R9*4), R11         // plane 4
	LEAQ (R11)(R9*4), R12        // plane 8
	LEAQ (R12)(R9*4), R13        // plane 12
fgloop:
	GTCOL((R8*1), Y0, Y4, Y8)    // rows 0 (Y0…Y3), 1 (Y4…Y7), 2 (Y8…Y11) of Gᵀ·dU
	GTCOL((R9*1), Y1, Y5, Y9)
	GTCOL((R9*2), Y2, Y6, Y10)
	GTCOL((R10*1), Y3, Y7, Y11)
	GROWG(Y0, Y1, Y2, Y3, 0)
	GROWG(Y4, Y5, Y6, Y7, 96)
	GROWG(Y8, Y9, Y10, Y11, 192)
	VMOVDQU winoCol<>(SB), Y15
	VMOVUPS 288(BX), Y11
	ADDF(0)
	ADDF(1)
	ADDF(2)
	ADDF(3)
	ADDF(4)
	ADDF(5)
	ADDF(6)
	ADDF(7)
	VMOVUPS Y11, 288(BX)
	ADDQ $32, SI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $288, DI
	DECQ CX
	JNZ  fgloop
fgdone:
	VZEROUPPER
	RET
