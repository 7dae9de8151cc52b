#include "textflag.h"
#include "expcore_amd64.h"

// The constants of math.Exp's amd64 FMA path (src/math/exp_amd64.s, after
// Shibata's SLEEF), the same literals, each stored four times (32 bytes, a
// YMM operand; the AVX-512 kernel broadcasts the first copy).
DATA sigconst<>+0(SB)/8, $0x8000000000000000
DATA sigconst<>+8(SB)/8, $0x8000000000000000
DATA sigconst<>+16(SB)/8, $0x8000000000000000
DATA sigconst<>+24(SB)/8, $0x8000000000000000
DATA sigconst<>+32(SB)/8, $1.4426950408889634073599246810018920
DATA sigconst<>+40(SB)/8, $1.4426950408889634073599246810018920
DATA sigconst<>+48(SB)/8, $1.4426950408889634073599246810018920
DATA sigconst<>+56(SB)/8, $1.4426950408889634073599246810018920
DATA sigconst<>+64(SB)/8, $0.69314718055966295651160180568695068359375
DATA sigconst<>+72(SB)/8, $0.69314718055966295651160180568695068359375
DATA sigconst<>+80(SB)/8, $0.69314718055966295651160180568695068359375
DATA sigconst<>+88(SB)/8, $0.69314718055966295651160180568695068359375
DATA sigconst<>+96(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA sigconst<>+104(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA sigconst<>+112(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA sigconst<>+120(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA sigconst<>+128(SB)/8, $0.0625
DATA sigconst<>+136(SB)/8, $0.0625
DATA sigconst<>+144(SB)/8, $0.0625
DATA sigconst<>+152(SB)/8, $0.0625
DATA sigconst<>+160(SB)/8, $2.4801587301587301587e-5
DATA sigconst<>+168(SB)/8, $2.4801587301587301587e-5
DATA sigconst<>+176(SB)/8, $2.4801587301587301587e-5
DATA sigconst<>+184(SB)/8, $2.4801587301587301587e-5
DATA sigconst<>+192(SB)/8, $1.9841269841269841270e-4
DATA sigconst<>+200(SB)/8, $1.9841269841269841270e-4
DATA sigconst<>+208(SB)/8, $1.9841269841269841270e-4
DATA sigconst<>+216(SB)/8, $1.9841269841269841270e-4
DATA sigconst<>+224(SB)/8, $1.3888888888888888889e-3
DATA sigconst<>+232(SB)/8, $1.3888888888888888889e-3
DATA sigconst<>+240(SB)/8, $1.3888888888888888889e-3
DATA sigconst<>+248(SB)/8, $1.3888888888888888889e-3
DATA sigconst<>+256(SB)/8, $8.3333333333333333333e-3
DATA sigconst<>+264(SB)/8, $8.3333333333333333333e-3
DATA sigconst<>+272(SB)/8, $8.3333333333333333333e-3
DATA sigconst<>+280(SB)/8, $8.3333333333333333333e-3
DATA sigconst<>+288(SB)/8, $4.1666666666666666667e-2
DATA sigconst<>+296(SB)/8, $4.1666666666666666667e-2
DATA sigconst<>+304(SB)/8, $4.1666666666666666667e-2
DATA sigconst<>+312(SB)/8, $4.1666666666666666667e-2
DATA sigconst<>+320(SB)/8, $1.6666666666666666667e-1
DATA sigconst<>+328(SB)/8, $1.6666666666666666667e-1
DATA sigconst<>+336(SB)/8, $1.6666666666666666667e-1
DATA sigconst<>+344(SB)/8, $1.6666666666666666667e-1
DATA sigconst<>+352(SB)/8, $0.5
DATA sigconst<>+360(SB)/8, $0.5
DATA sigconst<>+368(SB)/8, $0.5
DATA sigconst<>+376(SB)/8, $0.5
DATA sigconst<>+384(SB)/8, $1.0
DATA sigconst<>+392(SB)/8, $1.0
DATA sigconst<>+400(SB)/8, $1.0
DATA sigconst<>+408(SB)/8, $1.0
DATA sigconst<>+416(SB)/8, $2.0
DATA sigconst<>+424(SB)/8, $2.0
DATA sigconst<>+432(SB)/8, $2.0
DATA sigconst<>+440(SB)/8, $2.0
DATA sigconst<>+448(SB)/8, $1023
DATA sigconst<>+456(SB)/8, $1023
DATA sigconst<>+464(SB)/8, $1023
DATA sigconst<>+472(SB)/8, $1023
DATA sigconst<>+480(SB)/8, $-1023.0
DATA sigconst<>+488(SB)/8, $-1023.0
DATA sigconst<>+496(SB)/8, $-1023.0
DATA sigconst<>+504(SB)/8, $-1023.0
DATA sigconst<>+512(SB)/8, $6755399441055744.0
DATA sigconst<>+520(SB)/8, $6755399441055744.0
DATA sigconst<>+528(SB)/8, $6755399441055744.0
DATA sigconst<>+536(SB)/8, $6755399441055744.0
GLOBL sigconst<>(SB), RODATA|NOPTR, $544

#define SIGN sigconst<>+0(SB)
#define LOG2E sigconst<>+32(SB)
#define LN2U sigconst<>+64(SB)
#define LN2L sigconst<>+96(SB)
#define SIXTEENTH sigconst<>+128(SB)
#define C8 sigconst<>+160(SB)
#define C7 sigconst<>+192(SB)
#define C6 sigconst<>+224(SB)
#define C5 sigconst<>+256(SB)
#define C4 sigconst<>+288(SB)
#define C3 sigconst<>+320(SB)
#define HALF sigconst<>+352(SB)
#define ONE sigconst<>+384(SB)
#define TWO sigconst<>+416(SB)
#define BIAS sigconst<>+448(SB)
#define KMIN sigconst<>+480(SB)
#define MAGIC sigconst<>+512(SB)

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
	VBROADCASTSD KMIN, Z16
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
	VCMPPD       $18, KMIN, Y2, Y6 // k ≤ −1023
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
