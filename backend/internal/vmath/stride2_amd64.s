#include "textflag.h"

// func deinterleaveRowsAVX2(even, odd, src *float32, rows, n, es, os, ss int)
//
// Row r's first n pairs (n a multiple of 8) from src+r·ss into even+r·es
// and odd+r·os (strides in elements): per 16 values s0…s15, VSHUFPS picks
// (s0 s2 s8 s10 | s4 s6 s12 s14) and (s1 s3 s9 s11 | s5 s7 s13 s15), and
// VPERMPD 0xD8 puts the 64-bit pairs in order (0, 2, 1, 3).
TEXT ·deinterleaveRowsAVX2(SB), NOSPLIT, $0-64
	MOVQ even+0(FP), DI
	MOVQ odd+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ rows+24(FP), R8
	MOVQ n+32(FP), R9
	SHRQ $3, R9
	JZ drdone
	MOVQ es+40(FP), R10
	SHLQ $2, R10
	MOVQ os+48(FP), R11
	SHLQ $2, R11
	MOVQ ss+56(FP), R12
	SHLQ $2, R12
drrow:
	MOVQ DI, AX
	MOVQ DX, BX
	MOVQ SI, R13
	MOVQ R9, CX
drloop:
	VMOVUPS (R13), Y0
	VMOVUPS 32(R13), Y1
	VSHUFPS $0x88, Y1, Y0, Y2
	VSHUFPS $0xDD, Y1, Y0, Y3
	VPERMPD $0xD8, Y2, Y2
	VPERMPD $0xD8, Y3, Y3
	VMOVUPS Y2, (AX)
	VMOVUPS Y3, (BX)
	ADDQ $64, R13
	ADDQ $32, AX
	ADDQ $32, BX
	DECQ CX
	JNZ drloop
	ADDQ R10, DI
	ADDQ R11, DX
	ADDQ R12, SI
	DECQ R8
	JNZ drrow
drdone:
	VZEROUPPER
	RET

// func interleaveRowsAVX2(dst, even, odd *float32, rows, n, ds, es, os int)
//
// Row r's first n pairs (n a multiple of 8) from even+r·es and odd+r·os
// into dst+r·ds: VUNPCKLPS and VUNPCKHPS pair the values within each
// 128-bit lane, VPERM2F128 joins the lanes in order.
TEXT ·interleaveRowsAVX2(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ even+8(FP), SI
	MOVQ odd+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ n+32(FP), R9
	SHRQ $3, R9
	JZ irdone
	MOVQ ds+40(FP), R10
	SHLQ $2, R10
	MOVQ es+48(FP), R11
	SHLQ $2, R11
	MOVQ os+56(FP), R12
	SHLQ $2, R12
irrow:
	MOVQ DI, AX
	MOVQ SI, BX
	MOVQ DX, R13
	MOVQ R9, CX
irloop:
	VMOVUPS (BX), Y0
	VMOVUPS (R13), Y1
	VUNPCKLPS Y1, Y0, Y2
	VUNPCKHPS Y1, Y0, Y3
	VPERM2F128 $0x20, Y3, Y2, Y4
	VPERM2F128 $0x31, Y3, Y2, Y5
	VMOVUPS Y4, (AX)
	VMOVUPS Y5, 32(AX)
	ADDQ $32, BX
	ADDQ $32, R13
	ADDQ $64, AX
	DECQ CX
	JNZ irloop
	ADDQ R10, DI
	ADDQ R11, SI
	ADDQ R12, DX
	DECQ R8
	JNZ irrow
irdone:
	VZEROUPPER
	RET
