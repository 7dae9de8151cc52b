#include "textflag.h"

// Lane tables of maxPool2x2AVX512: the even and the odd columns of two
// vectors of a row (VPERMT2PS indices), and twice the lane number as
// int64 for the windows' first columns (lanes 0–7, 8–15).
DATA mpEven<>+0(SB)/4, $0
DATA mpEven<>+4(SB)/4, $2
DATA mpEven<>+8(SB)/4, $4
DATA mpEven<>+12(SB)/4, $6
DATA mpEven<>+16(SB)/4, $8
DATA mpEven<>+20(SB)/4, $10
DATA mpEven<>+24(SB)/4, $12
DATA mpEven<>+28(SB)/4, $14
DATA mpEven<>+32(SB)/4, $16
DATA mpEven<>+36(SB)/4, $18
DATA mpEven<>+40(SB)/4, $20
DATA mpEven<>+44(SB)/4, $22
DATA mpEven<>+48(SB)/4, $24
DATA mpEven<>+52(SB)/4, $26
DATA mpEven<>+56(SB)/4, $28
DATA mpEven<>+60(SB)/4, $30
GLOBL mpEven<>(SB), RODATA|NOPTR, $64

DATA mpIota<>+0(SB)/8, $0
DATA mpIota<>+8(SB)/8, $2
DATA mpIota<>+16(SB)/8, $4
DATA mpIota<>+24(SB)/8, $6
DATA mpIota<>+32(SB)/8, $8
DATA mpIota<>+40(SB)/8, $10
DATA mpIota<>+48(SB)/8, $12
DATA mpIota<>+56(SB)/8, $14
GLOBL mpIota<>(SB), RODATA|NOPTR, $64

// MP_BLOCK picks the first maximum of 16 windows: a, b (row 0's even and
// odd columns) and c, d (row 1's) from Z0:Z1 and Z2:Z3, as offsets 0, 1,
// w, w+1 (Z29, Z28, Z27 hold 1, w, w+1 as int32) in Z8, then the flat
// indices as int64 in Z9 (windows 0–7) and Z10 (8–15): Z26 + offset and
// Z26 + 16 + offset. A strictly greater value replaces the best, so the
// first of equal values (−0 and +0 equal) wins. K1 ends set when a lane
// of Z0–Z3 is NaN.
#define MP_BLOCK \
	VCMPPS $3, Z0, Z0, K1; \
	VCMPPS $3, Z1, Z1, K2; \
	KORW K1, K2, K1; \
	VCMPPS $3, Z2, Z2, K2; \
	KORW K1, K2, K1; \
	VCMPPS $3, Z3, Z3, K2; \
	KORW K1, K2, K1; \
	VMOVAPS Z0, Z4; \
	VPERMT2PS Z1, Z30, Z4; \
	VMOVAPS Z0, Z5; \
	VPERMT2PS Z1, Z31, Z5; \
	VMOVAPS Z2, Z6; \
	VPERMT2PS Z3, Z30, Z6; \
	VMOVAPS Z2, Z7; \
	VPERMT2PS Z3, Z31, Z7; \
	VPXORD Z8, Z8, Z8; \
	VCMPPS $0x1e, Z4, Z5, K2; \
	VMOVAPS Z5, K2, Z4; \
	VMOVDQA32 Z29, K2, Z8; \
	VCMPPS $0x1e, Z4, Z6, K2; \
	VMOVAPS Z6, K2, Z4; \
	VMOVDQA32 Z28, K2, Z8; \
	VCMPPS $0x1e, Z4, Z7, K2; \
	VMOVDQA32 Z27, K2, Z8; \
	VPMOVSXDQ Y8, Z9; \
	VEXTRACTI64X4 $1, Z8, Y10; \
	VPMOVSXDQ Y10, Z10; \
	VPADDQ Z26, Z9, Z9; \
	VPADDQ Z26, Z10, Z10; \
	VPADDQ Z25, Z10, Z10

// func maxPool2x2AVX512(x *float32, w int, idx *int64, oh, ow, base int) (rows int)
//
// For each output row oi < oh, windows j < ow: idx[oi·ow+j] = base +
// 2·oi·w + 2j + the offset of the first maximum of x[2oi·w+2j],
// x[2oi·w+2j+1], x[(2oi+1)·w+2j], x[(2oi+1)·w+2j+1]; 16 windows a block,
// the last ow mod 16 through masked loads and stores (nothing past a
// row's 2·ow values read). It stops at the first row holding a NaN
// among its windows' values, that row's outputs partly written, and
// returns the number of rows done.
TEXT ·maxPool2x2AVX512(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), R8
	MOVQ idx+16(FP), DI
	MOVQ oh+24(FP), R9
	MOVQ ow+32(FP), DX
	MOVQ base+40(FP), R11 // the row's first index
	XORQ R12, R12         // rows done
	// constants
	VMOVDQU32 mpEven<>(SB), Z30
	MOVL $1, AX
	VPBROADCASTD AX, Z29
	VPADDD Z29, Z30, Z31 // the odd columns
	MOVL R8, AX
	VPBROADCASTD AX, Z28
	INCL AX
	VPBROADCASTD AX, Z27
	MOVQ $16, AX
	VPBROADCASTQ AX, Z25
	VMOVDQU64 mpIota<>(SB), Z24
	MOVQ $32, AX
	VPBROADCASTQ AX, Z23
	// tail masks: K4, K5 the 2r values of row vectors 0 and 1, K6, K7
	// the r indices of stores 0 and 1 (r = ow mod 16)
	MOVQ DX, BX
	ANDQ $15, BX
	MOVQ BX, CX
	SHLQ $1, CX // 2r values, up to 30
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K4
	SHRQ $16, AX
	KMOVW AX, K5
	MOVQ BX, CX // r
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K6
	SHRQ $8, AX
	KMOVW AX, K7
	SHLQ $2, R8 // w in bytes
	TESTQ R9, R9
	JZ mpdone
mprow:
	VPBROADCASTQ R11, Z26
	VPADDQ Z24, Z26, Z26
	MOVQ SI, R13
	MOVQ DX, R10
	SHRQ $4, R10
	JZ mptail
mploop:
	VMOVUPS (R13), Z0
	VMOVUPS 64(R13), Z1
	VMOVUPS (R13)(R8*1), Z2
	VMOVUPS 64(R13)(R8*1), Z3
	MP_BLOCK
	KORTESTW K1, K1
	JNZ mpdone
	VMOVDQU64 Z9, (DI)
	VMOVDQU64 Z10, 64(DI)
	VPADDQ Z23, Z26, Z26
	ADDQ $128, R13
	ADDQ $128, DI
	DECQ R10
	JNZ mploop
mptail:
	TESTQ CX, CX
	JZ mpnext
	VMOVUPS.Z (R13), K4, Z0
	VMOVUPS.Z 64(R13), K5, Z1
	VMOVUPS.Z (R13)(R8*1), K4, Z2
	VMOVUPS.Z 64(R13)(R8*1), K5, Z3
	MP_BLOCK
	KORTESTW K1, K1
	JNZ mpdone
	VMOVDQU64 Z9, K6, (DI)
	VMOVDQU64 Z10, K7, 64(DI)
	LEAQ (DI)(CX*8), DI
mpnext:
	LEAQ (SI)(R8*2), SI
	MOVQ w+8(FP), AX
	LEAQ (R11)(AX*2), R11
	INCQ R12
	CMPQ R12, R9
	JB mprow
mpdone:
	MOVQ R12, rows+48(FP)
	VZEROUPPER
	RET
