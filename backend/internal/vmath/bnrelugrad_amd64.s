#include "textflag.h"

DATA bnrgone<>+0(SB)/4, $0x3f800000
GLOBL bnrgone<>(SB), RODATA|NOPTR, $4

// BNRG_STEP computes, for the four values at SI (x) and DX (gy): X3 = v =
// gy·f with f = 1.0 where a·x + cf > 0 (ordered: NaN gives 0) else +0,
// and adds v·(x − m) to the s partials (X13) and v to the g partials
// (X14). X0 keeps x.
#define BNRG_STEP \
	VMOVUPS (SI), X0; \
	VMULPS X8, X0, X1; \
	VADDPS X9, X1, X1; \
	VCMPPS $0x1e, X15, X1, X2; \
	VANDPS X12, X2, X2; \
	VMOVUPS (DX), X3; \
	VMULPS X2, X3, X3; \
	VSUBPS X11, X0, X5; \
	VMULPS X5, X3, X5; \
	VADDPS X5, X13, X13; \
	VADDPS X3, X14, X14

// func bnReluGradRow4(x, gy, d *float32, n int, a, cf, b, m float32) (sx, sg float32)
//
// BNReluGradRow32 on n elements (a multiple of 4), four lanes at a time:
// lane l holds the scalar loop's partials s_l and g_l, so each sum runs in
// the scalar order, every product and sum rounded on its own (no FMA).
// With d not nil, d = a·v + b. The partials are added as (s0+s1)+(s2+s3)
// by two HADDPS.
TEXT ·bnReluGradRow4(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ gy+8(FP), DX
	MOVQ d+16(FP), DI
	MOVQ n+24(FP), CX
	VBROADCASTSS a+32(FP), X8
	VBROADCASTSS cf+36(FP), X9
	VBROADCASTSS b+40(FP), X10
	VBROADCASTSS m+44(FP), X11
	VBROADCASTSS bnrgone<>(SB), X12
	VXORPS X13, X13, X13
	VXORPS X14, X14, X14
	VXORPS X15, X15, X15
	SHRQ $2, CX
	JZ sums
	TESTQ DI, DI
	JZ nod
loop:
	BNRG_STEP
	VMULPS X8, X3, X4
	VADDPS X10, X4, X4
	VMOVUPS X4, (DI)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, DI
	DECQ CX
	JNZ loop
	JMP sums
nod:
	BNRG_STEP
	ADDQ $16, SI
	ADDQ $16, DX
	DECQ CX
	JNZ nod
sums:
	VHADDPS X13, X13, X13
	VHADDPS X13, X13, X13
	VHADDPS X14, X14, X14
	VHADDPS X14, X14, X14
	VMOVSS X13, sx+48(FP)
	VMOVSS X14, sg+52(FP)
	VZEROUPPER
	RET
