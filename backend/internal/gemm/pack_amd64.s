#include "textflag.h"

// Packing kernels for pack.go (AVX2 transposes, SSE 6-wide copies). They
// are pure data movement and leave MXCSR alone: a copy keeps subnormals as
// they are, and the scaled variants multiply as Go code would.

// TRANSPOSE8 transposes the 8×8 block whose rows are Y0..Y7 into columns
// Y8..Y15 (Y8 = column 0: Y0[0], Y1[0], …, Y7[0]); Y0..Y7 are clobbered.
#define TRANSPOSE8 \
	VUNPCKLPS  Y1, Y0, Y8          \
	VUNPCKHPS  Y1, Y0, Y9          \
	VUNPCKLPS  Y3, Y2, Y10         \
	VUNPCKHPS  Y3, Y2, Y11         \
	VUNPCKLPS  Y5, Y4, Y12         \
	VUNPCKHPS  Y5, Y4, Y13         \
	VUNPCKLPS  Y7, Y6, Y14         \
	VUNPCKHPS  Y7, Y6, Y15         \
	VSHUFPS    $0x44, Y10, Y8, Y0  \
	VSHUFPS    $0xEE, Y10, Y8, Y1  \
	VSHUFPS    $0x44, Y11, Y9, Y2  \
	VSHUFPS    $0xEE, Y11, Y9, Y3  \
	VSHUFPS    $0x44, Y14, Y12, Y4 \
	VSHUFPS    $0xEE, Y14, Y12, Y5 \
	VSHUFPS    $0x44, Y15, Y13, Y6 \
	VSHUFPS    $0xEE, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8   \
	VPERM2F128 $0x20, Y5, Y1, Y9   \
	VPERM2F128 $0x20, Y6, Y2, Y10  \
	VPERM2F128 $0x20, Y7, Y3, Y11  \
	VPERM2F128 $0x31, Y4, Y0, Y12  \
	VPERM2F128 $0x31, Y5, Y1, Y13  \
	VPERM2F128 $0x31, Y6, Y2, Y14  \
	VPERM2F128 $0x31, Y7, Y3, Y15

// func transpose8(n8 int, src *float32, lds int, dst *float32, ldd int)
// dst[l*ldd+j] = src[j*lds+l] for j < 8, l < 8·n8 (n8 ≥ 1).
TEXT ·transpose8(SB), NOSPLIT, $0-40
	MOVQ n8+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	MOVQ dst+24(FP), DI
	MOVQ ldd+32(FP), R9
	SHLQ $2, R8
	SHLQ $2, R9
	LEAQ (R8)(R8*2), R10 // 3·lds
	LEAQ (SI)(R8*4), R11 // row 4
	LEAQ (R9)(R9*2), R12 // 3·ldd
	LEAQ (DI)(R9*4), R13 // dst row 4

t8loop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (SI)(R10*1), Y3
	VMOVUPS (R11), Y4
	VMOVUPS (R11)(R8*1), Y5
	VMOVUPS (R11)(R8*2), Y6
	VMOVUPS (R11)(R10*1), Y7
	TRANSPOSE8
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, (DI)(R9*1)
	VMOVUPS Y10, (DI)(R9*2)
	VMOVUPS Y11, (DI)(R12*1)
	VMOVUPS Y12, (R13)
	VMOVUPS Y13, (R13)(R9*1)
	VMOVUPS Y14, (R13)(R9*2)
	VMOVUPS Y15, (R13)(R12*1)
	ADDQ    $32, SI
	ADDQ    $32, R11
	LEAQ    (DI)(R9*8), DI
	LEAQ    (R13)(R9*8), R13
	DECQ    CX
	JNZ     t8loop
	VZEROUPPER
	RET

// LOAD6 loads 8 columns of the 6 rows at SI, SI+R8, …, SI+5·R8 (R10 =
// 3·R8, R11 = SI+4·R8) into Y0..Y5 and zeroes Y6, Y7.
#define LOAD6 \
	VMOVUPS (SI), Y0          \
	VMOVUPS (SI)(R8*1), Y1    \
	VMOVUPS (SI)(R8*2), Y2    \
	VMOVUPS (SI)(R10*1), Y3   \
	VMOVUPS (R11), Y4         \
	VMOVUPS (R11)(R8*1), Y5   \
	VXORPS  Y6, Y6, Y6        \
	VXORPS  Y7, Y7, Y7

// STORE6 stores the first 6 values of the columns Y8..Y15 contiguously at
// DI (48 values), advances SI, R11 by 8 columns and DI by 48 values. The
// 32-byte stores overlap the next column, which is stored after them; the
// last column is stored as 16+8 bytes so nothing past the 48 is written.
#define STORE6 \
	VMOVUPS      Y8, (DI)       \
	VMOVUPS      Y9, 24(DI)     \
	VMOVUPS      Y10, 48(DI)    \
	VMOVUPS      Y11, 72(DI)    \
	VMOVUPS      Y12, 96(DI)    \
	VMOVUPS      Y13, 120(DI)   \
	VMOVUPS      Y14, 144(DI)   \
	VMOVUPS      X15, 168(DI)   \
	VEXTRACTF128 $1, Y15, X15   \
	VMOVQ        X15, 184(DI)   \
	ADDQ         $32, SI        \
	ADDQ         $32, R11       \
	ADDQ         $192, DI

// func packA6(n8 int, src *float32, lds int, dst *float32)
// dst[l*6+i] = src[i*lds+l] for i < 6, l < 8·n8 (n8 ≥ 1).
TEXT ·packA6(SB), NOSPLIT, $0-32
	MOVQ n8+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	MOVQ dst+24(FP), DI
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R10
	LEAQ (SI)(R8*4), R11

a6loop:
	LOAD6
	TRANSPOSE8
	STORE6
	DECQ CX
	JNZ  a6loop
	VZEROUPPER
	RET

// func packA6Scaled(n8 int, src *float32, lds int, dst *float32, alpha float32)
// dst[l*6+i] = alpha·src[i*lds+l] for i < 6, l < 8·n8 (n8 ≥ 1).
TEXT ·packA6Scaled(SB), NOSPLIT, $0-36
	MOVQ n8+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	MOVQ dst+24(FP), DI
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R10
	LEAQ (SI)(R8*4), R11

a6sloop:
	VBROADCASTSS alpha+32(FP), Y7
	VMULPS       (SI), Y7, Y0
	VMULPS       (SI)(R8*1), Y7, Y1
	VMULPS       (SI)(R8*2), Y7, Y2
	VMULPS       (SI)(R10*1), Y7, Y3
	VMULPS       (R11), Y7, Y4
	VMULPS       (R11)(R8*1), Y7, Y5
	VXORPS       Y6, Y6, Y6
	VXORPS       Y7, Y7, Y7
	TRANSPOSE8
	STORE6
	DECQ         CX
	JNZ          a6sloop
	VZEROUPPER
	RET

// func packA6TPanels(kc, np int, src *float32, lds int, dst *float32, alpha float32)
// packs np side-by-side micro-panels of a transposed a (6 contiguous
// values per step, copied as 16+8 bytes, multiplied by alpha unless it is
// 1), l-outer so that each row of a is read once, contiguously:
// dst[p*6*kc + l*6 + i] = alpha·src[l*lds + p*6 + i] for p < np, i < 6,
// l < kc (kc, np ≥ 1).
TEXT ·packA6TPanels(SB), NOSPLIT, $0-44
	MOVQ   kc+0(FP), CX
	MOVQ   src+16(FP), SI
	MOVQ   lds+24(FP), R8
	MOVQ   dst+32(FP), DI
	MOVSS  alpha+40(FP), X2
	SHUFPS $0, X2, X2
	SHLQ   $2, R8
	MOVQ   CX, R9
	IMULQ  $24, R9        // bytes between panels: 6·kc values
	MOVL   alpha+40(FP), AX
	CMPL   AX, $0x3f800000 // alpha == 1.0 (bit pattern)
	JNE    ptsrow

ptrow:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ np+8(FP), DX

ptpanel:
	MOVUPS (R10), X0
	MOVQ   16(R10), AX
	MOVUPS X0, (R11)
	MOVQ   AX, 16(R11)
	ADDQ   $24, R10
	ADDQ   R9, R11
	DECQ   DX
	JNZ    ptpanel
	ADDQ   R8, SI
	ADDQ   $24, DI
	DECQ   CX
	JNZ    ptrow
	RET

ptsrow:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ np+8(FP), DX

ptspanel:
	MOVUPS (R10), X0
	MOVSD  16(R10), X1
	MULPS  X2, X0
	MULPS  X2, X1
	MOVUPS X0, (R11)
	MOVSD  X1, 16(R11)
	ADDQ   $24, R10
	ADDQ   R9, R11
	DECQ   DX
	JNZ    ptspanel
	ADDQ   R8, SI
	ADDQ   $24, DI
	DECQ   CX
	JNZ    ptsrow
	RET
