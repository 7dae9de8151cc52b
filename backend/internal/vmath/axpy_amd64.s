#include "textflag.h"

// func axpyAVX2(a float32, x, y *float32, n int)
//
// y[i] += a·x[i] for i < n, n a multiple of 16, as one fused multiply-add
// per element (VFMADD231PS), 16 values per iteration.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS a+0(FP), Y0
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ axdone
axloop:
	VMOVUPS (DI), Y1
	VMOVUPS 32(DI), Y2
	VFMADD231PS (SI), Y0, Y1
	VFMADD231PS 32(SI), Y0, Y2
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ axloop
axdone:
	VZEROUPPER
	RET

// func dotAVX2(x, y *float32, n int) float32
//
// Σ x[i]·y[i] for i < n, n a multiple of 16: two vectors of 8 partial
// sums (fused multiply-adds), added lane by lane at the end.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	SHRQ $4, CX
	JZ dotsum
dotloop:
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ dotloop
dotsum:
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func plusZeroAVX2(dst, x *float32, n int)
//
// dst[i] = 0 + x[i] for i < n, n a multiple of 16 (VADDPS with a vector
// of +0: −0 becomes +0, every other value is kept).
TEXT ·plusZeroAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	SHRQ $4, CX
	JZ pzdone
pzloop:
	VADDPS (SI), Y0, Y1
	VADDPS 32(SI), Y0, Y2
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ pzloop
pzdone:
	VZEROUPPER
	RET
