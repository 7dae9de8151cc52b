#include "textflag.h"
#include "expcore_amd64.h"

// The sign bit (SIGN, for a = −|x|), four times; the other constants
// are expcore_amd64.h's.
DATA sigconst<>+0(SB)/8, $0x8000000000000000
DATA sigconst<>+8(SB)/8, $0x8000000000000000
DATA sigconst<>+16(SB)/8, $0x8000000000000000
DATA sigconst<>+24(SB)/8, $0x8000000000000000
GLOBL sigconst<>(SB), RODATA|NOPTR, $32

#define SIGN sigconst<>+0(SB)

// Both kernels compute, per float64 lane, a = −|x| and e = exp(a) with
// the operations of math.Exp's FMA path in the same order, so e has
// math.Exp's bits: k = a·log2e rounded to an integer, r = (a − k·ln2u −
// k·ln2l)/16 with fused steps, p = Horner's polynomial in r, three
// squarings p ← p·(p+2), e = (p·(p+2)+1)·2^k. Then y = 1/(1+e) where x ≥ 0
// and y = e/(1+e) elsewhere, as sigmoid64 does.
//
// math.Exp rounds k by CVTSD2SL; the kernels add and subtract 1.5·2^52,
// which rounds to the same integer (to nearest, ties to even) wherever
// |a·log2e| < 2^31, and whose low mantissa bits give 2^k's exponent
// without a conversion. Where math.Exp takes its subnormal or underflow
// path (k ≤ −1023, |a·log2e| ≥ 2^31 and −Inf included) the kernels use
// e = 0: e < 2^−1022 there, so y is 1 for x ≥ 0 and a float64 below
// 2^−1022 otherwise, +0 once rounded to float32 either way. (a = −|x| is
// −x for x ≥ 0 except at x = −0, where exp(+0) and exp(−0) are both 1.)
// A NaN lane gives x itself (quieted), as sigmoid64 does.

// func sigmoidAVX512(dst, x *float32, n int)
TEXT ·sigmoidAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   done512
	VPBROADCASTQ SIGN, Z31
	EXP_CONSTS512
	VBROADCASTSD KDEN, Z16
	VPXORQ       Z15, Z15, Z15

loop512:
	VCVTPS2PD    (SI), Z0      // x
	VPORQ        Z31, Z0, Z1   // a = −|x|
	EXP_CORE512                // k (Z2), p·(p+2)+1 (Z1), k + 1023 in Z5's low bits
	VPSLLQ       $52, Z5, Z5   // 2^k
	VCMPPD       $6, Z16, Z2, K1 // not k ≤ −1023
	VMULPD.Z     Z5, Z1, K1, Z1 // e = p·2^k, or 0
	VADDPD       Z19, Z1, Z6   // 1+e
	VCMPPD       $29, Z15, Z0, K2 // x ≥ 0
	VMOVAPD      Z19, K2, Z1
	VDIVPD       Z6, Z1, Z1
	VCMPPD       $3, Z0, Z0, K3 // x NaN
	VMOVAPD      Z0, K3, Z1
	VCVTPD2PS    Z1, Y1
	VMOVUPS      Y1, (DI)
	ADDQ         $32, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          loop512
	VZEROUPPER

done512:
	RET

// func sigmoidAVX2(dst, x *float32, n int)
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $2, CX
	JZ   done2
	VMOVUPD SIGN, Y15
	VMOVUPD ONE, Y14
	VMOVUPD TWO, Y13
	VXORPD  Y12, Y12, Y12

loop2:
	VCVTPS2PD    (SI), Y0      // x
	VORPD        Y15, Y0, Y1   // a = −|x|
	EXP_CORE2(Y14, Y13, MAGIC) // k (Y2), 1.5·2^52 + k (Y3), p·(p+2)+1 (Y1)
	VPADDQ       BIAS, Y3, Y5
	VPSLLQ       $52, Y5, Y5   // 2^k
	VMULPD       Y5, Y1, Y1    // e = p·2^k
	VCMPPD       $18, KDEN, Y2, Y6 // k ≤ −1023
	VANDNPD      Y1, Y6, Y1
	VADDPD       Y14, Y1, Y6   // 1+e
	VCMPPD       $29, Y12, Y0, Y7 // x ≥ 0
	VBLENDVPD    Y7, Y14, Y1, Y1
	VDIVPD       Y6, Y1, Y1
	VCMPPD       $3, Y0, Y0, Y7 // x NaN
	VBLENDVPD    Y7, Y0, Y1, Y1
	VCVTPD2PSY   Y1, X1
	VMOVUPS      X1, (DI)
	ADDQ         $16, SI
	ADDQ         $16, DI
	DECQ         CX
	JNZ          loop2
	VZEROUPPER

done2:
	RET
