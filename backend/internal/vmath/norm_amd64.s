#include "textflag.h"

// func normRowAVX512(dst, x *float32, n int, mu, inv, s, b float64)
//
// dst = float32(((s·(x − mu))·inv) + b), each operation rounded to
// float64 (no fused multiply-add), as NormRow32's Go loop.
TEXT ·normRowAVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   rowdone
	VBROADCASTSD mu+24(FP), Z16
	VBROADCASTSD inv+32(FP), Z17
	VBROADCASTSD s+40(FP), Z18
	VBROADCASTSD b+48(FP), Z19

rowloop:
	VCVTPS2PD (SI), Z0    // x
	VSUBPD    Z16, Z0, Z0 // x − mu
	VMULPD    Z0, Z18, Z0 // s·(x − mu)
	VMULPD    Z17, Z0, Z0 // ·inv
	VADDPD    Z19, Z0, Z0 // + b
	VCVTPD2PS Z0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       rowloop
	VZEROUPPER

rowdone:
	RET

// func normGradRowAVX512(dst, x, gr *float32, n int, mu, inv, m, mx, si float64)
//
// dst = float32(si·((g − m) − x̂·mx)), x̂ = (x − mu)·inv, each operation
// rounded to float64, as NormGradRow32's Go loop.
TEXT ·normGradRowAVX512(SB), NOSPLIT, $0-72
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gr+16(FP), BX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   graddone
	VBROADCASTSD mu+32(FP), Z16
	VBROADCASTSD inv+40(FP), Z17
	VBROADCASTSD m+48(FP), Z18
	VBROADCASTSD mx+56(FP), Z19
	VBROADCASTSD si+64(FP), Z20

gradloop:
	VCVTPS2PD (SI), Z0    // x
	VSUBPD    Z16, Z0, Z0 // x − mu
	VMULPD    Z17, Z0, Z0 // x̂
	VMULPD    Z19, Z0, Z0 // x̂·mx
	VCVTPS2PD (BX), Z1    // g
	VSUBPD    Z18, Z1, Z1 // g − m
	VSUBPD    Z0, Z1, Z1  // (g − m) − x̂·mx
	VMULPD    Z1, Z20, Z1 // si·(…)
	VCVTPD2PS Z1, Y1
	VMOVUPS   Y1, (DI)
	ADDQ      $32, SI
	ADDQ      $32, BX
	ADDQ      $32, DI
	DECQ      CX
	JNZ       gradloop
	VZEROUPPER

graddone:
	RET

// func reluGradAVX512(dst, y, gr *float32, n int)
//
// dst = g·f, f = 1 where y > 0 (ordered: false for NaN) and 0 elsewhere,
// as ReluGrad32's Go loop.
TEXT ·reluGradAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ gr+16(FP), BX
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ   reludone
	VPXORD       Z3, Z3, Z3
	MOVL         $0x3f800000, AX
	VPBROADCASTD AX, Z4 // 1.0

reluloop:
	VMOVUPS    (SI), Z0
	VCMPPS     $0x1e, Z3, Z0, K1 // y > 0 (GT_OQ)
	VMOVAPS.Z  Z4, K1, Z1        // the factor: 1 or 0
	VMULPS     (BX), Z1, Z1
	VMOVUPS    Z1, (DI)
	ADDQ       $64, SI
	ADDQ       $64, BX
	ADDQ       $64, DI
	DECQ       CX
	JNZ        reluloop
	VZEROUPPER

reludone:
	RET

// TRANSPOSE8 transposes the 8×8 float32 matrix in rows Y0…Y7 into
// columns Y0…Y7 (Y8…Y15 clobbered): column j holds element j of every
// row, row r in lane r.
#define TRANSPOSE8 \
	VUNPCKLPS Y1, Y0, Y8 \
	VUNPCKHPS Y1, Y0, Y9 \
	VUNPCKLPS Y3, Y2, Y10 \
	VUNPCKHPS Y3, Y2, Y11 \
	VUNPCKLPS Y5, Y4, Y12 \
	VUNPCKHPS Y5, Y4, Y13 \
	VUNPCKLPS Y7, Y6, Y14 \
	VUNPCKHPS Y7, Y6, Y15 \
	VSHUFPS $0x44, Y10, Y8, Y0 \
	VSHUFPS $0xEE, Y10, Y8, Y1 \
	VSHUFPS $0x44, Y11, Y9, Y2 \
	VSHUFPS $0xEE, Y11, Y9, Y3 \
	VSHUFPS $0x44, Y14, Y12, Y4 \
	VSHUFPS $0xEE, Y14, Y12, Y5 \
	VSHUFPS $0x44, Y15, Y13, Y6 \
	VSHUFPS $0xEE, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8 \
	VPERM2F128 $0x20, Y5, Y1, Y9 \
	VPERM2F128 $0x20, Y6, Y2, Y10 \
	VPERM2F128 $0x20, Y7, Y3, Y11 \
	VPERM2F128 $0x31, Y4, Y0, Y12 \
	VPERM2F128 $0x31, Y5, Y1, Y13 \
	VPERM2F128 $0x31, Y6, Y2, Y14 \
	VPERM2F128 $0x31, Y7, Y3, Y15 \
	VMOVAPS Y8, Y0 \
	VMOVAPS Y9, Y1 \
	VMOVAPS Y10, Y2 \
	VMOVAPS Y11, Y3 \
	VMOVAPS Y12, Y4 \
	VMOVAPS Y13, Y5 \
	VMOVAPS Y14, Y6 \
	VMOVAPS Y15, Y7

// LOAD8 loads 8 values of each of the 8 rows at p, S·4 bytes apart (R
// the row stride in bytes, R3 = 3·R), into Y0…Y7.
#define LOAD8(p) \
	MOVQ p, R8 \
	VMOVUPS (R8), Y0 \
	VMOVUPS (R8)(R9*1), Y1 \
	VMOVUPS (R8)(R9*2), Y2 \
	VMOVUPS (R8)(R10*1), Y3 \
	ADDQ R11, R8 \
	VMOVUPS (R8), Y4 \
	VMOVUPS (R8)(R9*1), Y5 \
	VMOVUPS (R8)(R9*2), Y6 \
	VMOVUPS (R8)(R10*1), Y7

// XHAT(col, dst): dst = (float64(col) − mu)·inv, lane by lane.
#define XHAT(col, dst) \
	VCVTPS2PD col, dst \
	VSUBPD Z30, dst, dst \
	VMULPD Z31, dst, dst

// GSUM(col, xh): mg += float64(col); mgx += float64(col)·xh.
#define GSUM(col, xh) \
	VCVTPS2PD col, Z24 \
	VADDPD Z24, Z28, Z28 \
	VMULPD xh, Z24, Z25 \
	VADDPD Z25, Z29, Z29

// func normSums8AVX512(x, gr *float32, S, n int, mu, inv, mg, mgx *[8]float64)
//
// Lane e runs instance e's chains: column j of the transposed 8×8 blocks
// after column j−1, as NormSums8's Go loop.
TEXT ·normSums8AVX512(SB), NOSPLIT, $0-64
	MOVQ x+0(FP), SI
	MOVQ gr+8(FP), BX
	MOVQ S+16(FP), R9
	SHLQ $2, R9           // row stride in bytes
	LEAQ (R9)(R9*2), R10  // 3 rows
	LEAQ (R9*4), R11      // 4 rows
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   sumsdone
	MOVQ mu+32(FP), AX
	VMOVUPD (AX), Z30
	MOVQ inv+40(FP), AX
	VMOVUPD (AX), Z31
	MOVQ mg+48(FP), AX
	VMOVUPD (AX), Z28
	MOVQ mgx+56(FP), AX
	VMOVUPD (AX), Z29

sumsloop:
	LOAD8(SI)
	TRANSPOSE8
	XHAT(Y0, Z16)
	XHAT(Y1, Z17)
	XHAT(Y2, Z18)
	XHAT(Y3, Z19)
	XHAT(Y4, Z20)
	XHAT(Y5, Z21)
	XHAT(Y6, Z22)
	XHAT(Y7, Z23)
	LOAD8(BX)
	TRANSPOSE8
	GSUM(Y0, Z16)
	GSUM(Y1, Z17)
	GSUM(Y2, Z18)
	GSUM(Y3, Z19)
	GSUM(Y4, Z20)
	GSUM(Y5, Z21)
	GSUM(Y6, Z22)
	GSUM(Y7, Z23)
	ADDQ $32, SI
	ADDQ $32, BX
	DECQ CX
	JNZ  sumsloop

	MOVQ mg+48(FP), AX
	VMOVUPD Z28, (AX)
	MOVQ mgx+56(FP), AX
	VMOVUPD Z29, (AX)
	VZEROUPPER

sumsdone:
	RET

// XSUM(col): acc += float64(col).
#define XSUM(col) \
	VCVTPS2PD col, Z24 \
	VADDPD Z24, Z28, Z28

// XSQ(col): acc += (float64(col) − mu)², the difference rounded, then
// its square.
#define XSQ(col) \
	VCVTPS2PD col, Z24 \
	VSUBPD Z30, Z24, Z24 \
	VMULPD Z24, Z24, Z24 \
	VADDPD Z24, Z28, Z28

// func sums8AVX512(x *float32, S, n int, acc, mu *[8]float64)
//
// Lane e runs instance e's chain: column j of the transposed 8×8 blocks
// after column j−1, as Stats8's Go loops.
TEXT ·sums8AVX512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ S+8(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	LEAQ (R9*4), R11
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   s8done
	MOVQ acc+24(FP), AX
	VMOVUPD (AX), Z28
	MOVQ mu+32(FP), DX
	TESTQ DX, DX
	JNZ  sqloop

sumloop:
	LOAD8(SI)
	TRANSPOSE8
	XSUM(Y0)
	XSUM(Y1)
	XSUM(Y2)
	XSUM(Y3)
	XSUM(Y4)
	XSUM(Y5)
	XSUM(Y6)
	XSUM(Y7)
	ADDQ $32, SI
	DECQ CX
	JNZ  sumloop
	JMP  s8store

sqloop:
	VMOVUPD (DX), Z30
sqnext:
	LOAD8(SI)
	TRANSPOSE8
	XSQ(Y0)
	XSQ(Y1)
	XSQ(Y2)
	XSQ(Y3)
	XSQ(Y4)
	XSQ(Y5)
	XSQ(Y6)
	XSQ(Y7)
	ADDQ $32, SI
	DECQ CX
	JNZ  sqnext

s8store:
	VMOVUPD Z28, (AX)
	VZEROUPPER

s8done:
	RET

// GCOL(col, dst): dst = float64(col).
#define GCOL(col, dst) \
	VCVTPS2PD col, dst

// PSUM(col, gd): acc += gd·float64(col).
#define PSUM(col, gd) \
	VCVTPS2PD col, Z24 \
	VMULPD Z24, gd, Z24 \
	VADDPD Z24, Z28, Z28

// NSUM(col, gd): acc += (gd·(float64(col) − mu))·inv.
#define NSUM(col, gd) \
	VCVTPS2PD col, Z24 \
	VSUBPD Z30, Z24, Z24 \
	VMULPD Z24, gd, Z24 \
	VMULPD Z31, Z24, Z24 \
	VADDPD Z24, Z28, Z28

// func prodSums8AVX512(gr, o *float32, S, n int, acc, mu, inv *[8]float64)
//
// Lane e runs run e's chain: column j of the transposed 8×8 blocks after
// column j−1, as AddProdRuns8's Go loops.
TEXT ·prodSums8AVX512(SB), NOSPLIT, $0-56
	MOVQ gr+0(FP), SI
	MOVQ o+8(FP), BX
	MOVQ S+16(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	LEAQ (R9*4), R11
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   p8done
	MOVQ acc+32(FP), AX
	VMOVUPD (AX), Z28
	MOVQ mu+40(FP), DX
	TESTQ DX, DX
	JNZ  nsetup

ploop:
	LOAD8(SI)
	TRANSPOSE8
	GCOL(Y0, Z16)
	GCOL(Y1, Z17)
	GCOL(Y2, Z18)
	GCOL(Y3, Z19)
	GCOL(Y4, Z20)
	GCOL(Y5, Z21)
	GCOL(Y6, Z22)
	GCOL(Y7, Z23)
	LOAD8(BX)
	TRANSPOSE8
	PSUM(Y0, Z16)
	PSUM(Y1, Z17)
	PSUM(Y2, Z18)
	PSUM(Y3, Z19)
	PSUM(Y4, Z20)
	PSUM(Y5, Z21)
	PSUM(Y6, Z22)
	PSUM(Y7, Z23)
	ADDQ $32, SI
	ADDQ $32, BX
	DECQ CX
	JNZ  ploop
	JMP  p8store

nsetup:
	VMOVUPD (DX), Z30
	MOVQ inv+48(FP), DX
	VMOVUPD (DX), Z31

nloop:
	LOAD8(SI)
	TRANSPOSE8
	GCOL(Y0, Z16)
	GCOL(Y1, Z17)
	GCOL(Y2, Z18)
	GCOL(Y3, Z19)
	GCOL(Y4, Z20)
	GCOL(Y5, Z21)
	GCOL(Y6, Z22)
	GCOL(Y7, Z23)
	LOAD8(BX)
	TRANSPOSE8
	NSUM(Y0, Z16)
	NSUM(Y1, Z17)
	NSUM(Y2, Z18)
	NSUM(Y3, Z19)
	NSUM(Y4, Z20)
	NSUM(Y5, Z21)
	NSUM(Y6, Z22)
	NSUM(Y7, Z23)
	ADDQ $32, SI
	ADDQ $32, BX
	DECQ CX
	JNZ  nloop

p8store:
	VMOVUPD Z28, (AX)
	VZEROUPPER

p8done:
	RET
