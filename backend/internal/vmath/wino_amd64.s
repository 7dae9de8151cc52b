#include "textflag.h"

// The Winograd F(2×2, 3×3) tile transforms on 8 tiles a step (AVX2), with
// the operations of winoInputGo and winoOutputGo in the same order: the
// same bits.

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

// func winoInputAVX2(rows *float32, ld int, dst *float32, stride int, n int)
//
// rows: four zero-padded input rows ld floats apart; the tile t reads
// columns 2t…2t+3 of each. dst: 16 planes stride floats apart, the tile t
// at element t of each. n: a multiple of 8.
TEXT ·winoInputAVX2(SB), NOSPLIT, $0-40
	MOVQ rows+0(FP), SI
	MOVQ ld+8(FP), DX
	SHLQ $2, DX                  // ld in bytes
	MOVQ dst+16(FP), DI
	MOVQ stride+24(FP), R9
	SHLQ $2, R9                  // stride in bytes
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ   indone
	LEAQ (SI)(DX*2), R14         // row 2
	LEAQ (R14)(DX*1), R15        // row 3
	LEAQ (SI)(DX*1), DX          // row 1
	LEAQ (R9)(R9*2), R10         // 3·stride
	LEAQ (DI)(R9*4), R11         // plane 4
	LEAQ (R11)(R9*4), R12        // plane 8
	LEAQ (R12)(R9*4), R13        // plane 12
inloop:
	ROW(R14, Y0, Y1, Y2, Y3)     // row 2
	ROW(SI, Y4, Y5, Y6, Y7)      // row 0
	VSUBPS Y0, Y4, Y4            // a = row 0 − row 2
	VSUBPS Y1, Y5, Y5
	VSUBPS Y2, Y6, Y6
	VSUBPS Y3, Y7, Y7
	VSUBPS Y6, Y4, Y8            // a0 − a2
	VADDPS Y6, Y5, Y9            // a1 + a2
	VSUBPS Y5, Y6, Y10           // a2 − a1
	VSUBPS Y7, Y5, Y11           // a1 − a3
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, (DI)(R9*1)
	VMOVUPS Y10, (DI)(R9*2)
	VMOVUPS Y11, (DI)(R10*1)
	ROW(DX, Y4, Y5, Y6, Y7)      // row 1
	VADDPS Y0, Y4, Y8            // b = row 1 + row 2
	VADDPS Y1, Y5, Y9
	VADDPS Y2, Y6, Y10
	VADDPS Y3, Y7, Y11
	VSUBPS Y10, Y8, Y12
	VADDPS Y10, Y9, Y13
	VSUBPS Y9, Y10, Y14
	VSUBPS Y11, Y9, Y15
	VMOVUPS Y12, (R11)
	VMOVUPS Y13, (R11)(R9*1)
	VMOVUPS Y14, (R11)(R9*2)
	VMOVUPS Y15, (R11)(R10*1)
	VSUBPS Y4, Y0, Y8            // e = row 2 − row 1
	VSUBPS Y5, Y1, Y9
	VSUBPS Y6, Y2, Y10
	VSUBPS Y7, Y3, Y11
	VSUBPS Y10, Y8, Y12
	VADDPS Y10, Y9, Y13
	VSUBPS Y9, Y10, Y14
	VSUBPS Y11, Y9, Y15
	VMOVUPS Y12, (R12)
	VMOVUPS Y13, (R12)(R9*1)
	VMOVUPS Y14, (R12)(R9*2)
	VMOVUPS Y15, (R12)(R10*1)
	ROW(R15, Y0, Y1, Y2, Y3)     // row 3
	VSUBPS Y0, Y4, Y8            // f = row 1 − row 3
	VSUBPS Y1, Y5, Y9
	VSUBPS Y2, Y6, Y10
	VSUBPS Y3, Y7, Y11
	VSUBPS Y10, Y8, Y12
	VADDPS Y10, Y9, Y13
	VSUBPS Y9, Y10, Y14
	VSUBPS Y11, Y9, Y15
	VMOVUPS Y12, (R13)
	VMOVUPS Y13, (R13)(R9*1)
	VMOVUPS Y14, (R13)(R9*2)
	VMOVUPS Y15, (R13)(R10*1)
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
indone:
	VZEROUPPER
	RET

// func winoOutputAVX2(src *float32, stride int, y0, y1 *float32, n int, bias float32)
//
// src: 16 planes stride floats apart, the tile t at element t of each;
// y0, y1: the two output rows, the tile t at columns 2t and 2t+1. n: a
// multiple of 8.
TEXT ·winoOutputAVX2(SB), NOSPLIT, $0-44
	MOVQ src+0(FP), SI
	MOVQ stride+8(FP), R9
	SHLQ $2, R9
	MOVQ y0+16(FP), DI
	MOVQ y1+24(FP), DX
	MOVQ n+32(FP), CX
	VBROADCASTSS bias+40(FP), Y15
	SHRQ $3, CX
	JZ   outdone
	LEAQ (R9)(R9*2), R10         // 3·stride
	LEAQ (SI)(R9*4), R11         // plane 4
	LEAQ (R11)(R9*4), R12        // plane 8
	LEAQ (R12)(R9*4), R13        // plane 12
outloop:
	// s_j = (m_j + m_4+j) + m_8+j, u_j = (m_4+j − m_8+j) − m_12+j
	VMOVUPS (SI), Y0
	VMOVUPS (R11), Y8
	VMOVUPS (R12), Y9
	VMOVUPS (R13), Y10
	VADDPS Y8, Y0, Y0
	VADDPS Y9, Y0, Y0
	VSUBPS Y9, Y8, Y4
	VSUBPS Y10, Y4, Y4
	VMOVUPS (SI)(R9*1), Y1
	VMOVUPS (R11)(R9*1), Y8
	VMOVUPS (R12)(R9*1), Y9
	VMOVUPS (R13)(R9*1), Y10
	VADDPS Y8, Y1, Y1
	VADDPS Y9, Y1, Y1
	VSUBPS Y9, Y8, Y5
	VSUBPS Y10, Y5, Y5
	VMOVUPS (SI)(R9*2), Y2
	VMOVUPS (R11)(R9*2), Y8
	VMOVUPS (R12)(R9*2), Y9
	VMOVUPS (R13)(R9*2), Y10
	VADDPS Y8, Y2, Y2
	VADDPS Y9, Y2, Y2
	VSUBPS Y9, Y8, Y6
	VSUBPS Y10, Y6, Y6
	VMOVUPS (SI)(R10*1), Y3
	VMOVUPS (R11)(R10*1), Y8
	VMOVUPS (R12)(R10*1), Y9
	VMOVUPS (R13)(R10*1), Y10
	VADDPS Y8, Y3, Y3
	VADDPS Y9, Y3, Y3
	VSUBPS Y9, Y8, Y7
	VSUBPS Y10, Y7, Y7
	// row 0: even (s0 + s1) + s2 + bias, odd (s1 − s2) − s3 + bias
	VADDPS Y1, Y0, Y8
	VADDPS Y2, Y8, Y8
	VADDPS Y15, Y8, Y8
	VSUBPS Y2, Y1, Y9
	VSUBPS Y3, Y9, Y9
	VADDPS Y15, Y9, Y9
	VUNPCKLPS Y9, Y8, Y10
	VUNPCKHPS Y9, Y8, Y11
	VPERM2F128 $0x20, Y11, Y10, Y12
	VPERM2F128 $0x31, Y11, Y10, Y13
	VMOVUPS Y12, (DI)
	VMOVUPS Y13, 32(DI)
	// row 1: the same of u
	VADDPS Y5, Y4, Y8
	VADDPS Y6, Y8, Y8
	VADDPS Y15, Y8, Y8
	VSUBPS Y6, Y5, Y9
	VSUBPS Y7, Y9, Y9
	VADDPS Y15, Y9, Y9
	VUNPCKLPS Y9, Y8, Y10
	VUNPCKHPS Y9, Y8, Y11
	VPERM2F128 $0x20, Y11, Y10, Y12
	VPERM2F128 $0x31, Y11, Y10, Y13
	VMOVUPS Y12, (DX)
	VMOVUPS Y13, 32(DX)
	ADDQ $32, SI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $64, DI
	ADDQ $64, DX
	DECQ CX
	JNZ  outloop
outdone:
	VZEROUPPER
	RET

DATA winoSign<>+0(SB)/4, $0x80000000
GLOBL winoSign<>(SB), RODATA|NOPTR, $4

// func winoGradAVX2(y0, y1 *float32, dst *float32, stride int, n int)
//
// y0, y1: two rows of the output gradient, the tile t at columns 2t and
// 2t+1; dst: 16 planes stride floats apart, the tile t at element t of
// each. n: a multiple of 8.
TEXT ·winoGradAVX2(SB), NOSPLIT, $0-40
	MOVQ y0+0(FP), SI
	MOVQ y1+8(FP), DX
	MOVQ dst+16(FP), DI
	MOVQ stride+24(FP), R9
	SHLQ $2, R9
	MOVQ n+32(FP), CX
	VBROADCASTSS winoSign<>(SB), Y13
	SHRQ $3, CX
	JZ   graddone
	LEAQ (R9)(R9*2), R10         // 3·stride
	LEAQ (DI)(R9*4), R11         // plane 4
	LEAQ (R11)(R9*4), R12        // plane 8
	LEAQ (R12)(R9*4), R8         // plane 12
gradloop:
	DEINT(0, SI, Y0, Y1)         // a, b: row 0's even and odd columns
	DEINT(0, DX, Y2, Y3)         // c, d: row 1's
	// [a, a+b, a−b, −b]
	VADDPS Y1, Y0, Y4
	VSUBPS Y1, Y0, Y5
	VXORPS Y13, Y1, Y6
	VMOVUPS Y0, (DI)
	VMOVUPS Y4, (DI)(R9*1)
	VMOVUPS Y5, (DI)(R9*2)
	VMOVUPS Y6, (DI)(R10*1)
	// p = a+c, s = b+d: [p, p+s, p−s, −s]
	VADDPS Y2, Y0, Y7
	VADDPS Y3, Y1, Y8
	VADDPS Y8, Y7, Y4
	VSUBPS Y8, Y7, Y5
	VXORPS Y13, Y8, Y6
	VMOVUPS Y7, (R11)
	VMOVUPS Y4, (R11)(R9*1)
	VMOVUPS Y5, (R11)(R9*2)
	VMOVUPS Y6, (R11)(R10*1)
	// p = a−c, s = b−d
	VSUBPS Y2, Y0, Y7
	VSUBPS Y3, Y1, Y8
	VADDPS Y8, Y7, Y4
	VSUBPS Y8, Y7, Y5
	VXORPS Y13, Y8, Y6
	VMOVUPS Y7, (R12)
	VMOVUPS Y4, (R12)(R9*1)
	VMOVUPS Y5, (R12)(R9*2)
	VMOVUPS Y6, (R12)(R10*1)
	// [−c, −c−d, d−c, d]
	VXORPS Y13, Y2, Y7
	VSUBPS Y3, Y7, Y4
	VSUBPS Y2, Y3, Y5
	VMOVUPS Y7, (R8)
	VMOVUPS Y4, (R8)(R9*1)
	VMOVUPS Y5, (R8)(R9*2)
	VMOVUPS Y3, (R8)(R10*1)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R8
	DECQ CX
	JNZ  gradloop
graddone:
	VZEROUPPER
	RET
