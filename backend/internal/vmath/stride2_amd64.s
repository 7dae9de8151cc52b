#include "textflag.h"

// func deinterleaveAVX2(even, odd, src *float32, n int)
//
// even[i] = src[2i], odd[i] = src[2i+1] for i < n, n a multiple of 8:
// per 16 values s0…s15, VSHUFPS picks (s0 s2 s8 s10 | s4 s6 s12 s14) and
// (s1 s3 s9 s11 | s5 s7 s13 s15), and VPERMPD 0xD8 puts the 64-bit pairs
// in order (0, 2, 1, 3).
TEXT ·deinterleaveAVX2(SB), NOSPLIT, $0-32
	MOVQ even+0(FP), DI
	MOVQ odd+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ didone
diloop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VSHUFPS $0x88, Y1, Y0, Y2
	VSHUFPS $0xDD, Y1, Y0, Y3
	VPERMPD $0xD8, Y2, Y2
	VPERMPD $0xD8, Y3, Y3
	VMOVUPS Y2, (DI)
	VMOVUPS Y3, (DX)
	ADDQ $64, SI
	ADDQ $32, DI
	ADDQ $32, DX
	DECQ CX
	JNZ diloop
didone:
	VZEROUPPER
	RET

// func interleaveAVX2(dst, even, odd *float32, n int)
//
// dst[2i] = even[i], dst[2i+1] = odd[i] for i < n, n a multiple of 8:
// VUNPCKLPS and VUNPCKHPS pair the values within each 128-bit lane,
// VPERM2F128 joins the lanes in order.
TEXT ·interleaveAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ even+8(FP), SI
	MOVQ odd+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ ildone
illoop:
	VMOVUPS (SI), Y0
	VMOVUPS (DX), Y1
	VUNPCKLPS Y1, Y0, Y2
	VUNPCKHPS Y1, Y0, Y3
	VPERM2F128 $0x20, Y3, Y2, Y4
	VPERM2F128 $0x31, Y3, Y2, Y5
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $64, DI
	DECQ CX
	JNZ illoop
ildone:
	VZEROUPPER
	RET
