#include "textflag.h"
#include "expcore_amd64.h"

// The constants of math.Exp's amd64 FMA path (src/math/exp_amd64.s), the
// same literals, and those of its scaling by 2^k, each stored four times
// (32 bytes, a YMM operand; the AVX-512 kernel broadcasts the first copy).
DATA expconst<>+0(SB)/8, $1.4426950408889634073599246810018920
DATA expconst<>+8(SB)/8, $1.4426950408889634073599246810018920
DATA expconst<>+16(SB)/8, $1.4426950408889634073599246810018920
DATA expconst<>+24(SB)/8, $1.4426950408889634073599246810018920
DATA expconst<>+32(SB)/8, $0.69314718055966295651160180568695068359375
DATA expconst<>+40(SB)/8, $0.69314718055966295651160180568695068359375
DATA expconst<>+48(SB)/8, $0.69314718055966295651160180568695068359375
DATA expconst<>+56(SB)/8, $0.69314718055966295651160180568695068359375
DATA expconst<>+64(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA expconst<>+72(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA expconst<>+80(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA expconst<>+88(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA expconst<>+96(SB)/8, $0.0625
DATA expconst<>+104(SB)/8, $0.0625
DATA expconst<>+112(SB)/8, $0.0625
DATA expconst<>+120(SB)/8, $0.0625
DATA expconst<>+128(SB)/8, $2.4801587301587301587e-5
DATA expconst<>+136(SB)/8, $2.4801587301587301587e-5
DATA expconst<>+144(SB)/8, $2.4801587301587301587e-5
DATA expconst<>+152(SB)/8, $2.4801587301587301587e-5
DATA expconst<>+160(SB)/8, $1.9841269841269841270e-4
DATA expconst<>+168(SB)/8, $1.9841269841269841270e-4
DATA expconst<>+176(SB)/8, $1.9841269841269841270e-4
DATA expconst<>+184(SB)/8, $1.9841269841269841270e-4
DATA expconst<>+192(SB)/8, $1.3888888888888888889e-3
DATA expconst<>+200(SB)/8, $1.3888888888888888889e-3
DATA expconst<>+208(SB)/8, $1.3888888888888888889e-3
DATA expconst<>+216(SB)/8, $1.3888888888888888889e-3
DATA expconst<>+224(SB)/8, $8.3333333333333333333e-3
DATA expconst<>+232(SB)/8, $8.3333333333333333333e-3
DATA expconst<>+240(SB)/8, $8.3333333333333333333e-3
DATA expconst<>+248(SB)/8, $8.3333333333333333333e-3
DATA expconst<>+256(SB)/8, $4.1666666666666666667e-2
DATA expconst<>+264(SB)/8, $4.1666666666666666667e-2
DATA expconst<>+272(SB)/8, $4.1666666666666666667e-2
DATA expconst<>+280(SB)/8, $4.1666666666666666667e-2
DATA expconst<>+288(SB)/8, $1.6666666666666666667e-1
DATA expconst<>+296(SB)/8, $1.6666666666666666667e-1
DATA expconst<>+304(SB)/8, $1.6666666666666666667e-1
DATA expconst<>+312(SB)/8, $1.6666666666666666667e-1
DATA expconst<>+320(SB)/8, $0.5
DATA expconst<>+328(SB)/8, $0.5
DATA expconst<>+336(SB)/8, $0.5
DATA expconst<>+344(SB)/8, $0.5
DATA expconst<>+352(SB)/8, $1.0
DATA expconst<>+360(SB)/8, $1.0
DATA expconst<>+368(SB)/8, $1.0
DATA expconst<>+376(SB)/8, $1.0
DATA expconst<>+384(SB)/8, $2.0
DATA expconst<>+392(SB)/8, $2.0
DATA expconst<>+400(SB)/8, $2.0
DATA expconst<>+408(SB)/8, $2.0
DATA expconst<>+416(SB)/8, $6755399441055744.0
DATA expconst<>+424(SB)/8, $6755399441055744.0
DATA expconst<>+432(SB)/8, $6755399441055744.0
DATA expconst<>+440(SB)/8, $6755399441055744.0
DATA expconst<>+448(SB)/8, $1023
DATA expconst<>+456(SB)/8, $1023
DATA expconst<>+464(SB)/8, $1023
DATA expconst<>+472(SB)/8, $1023
DATA expconst<>+480(SB)/8, $1022
DATA expconst<>+488(SB)/8, $1022
DATA expconst<>+496(SB)/8, $1022
DATA expconst<>+504(SB)/8, $1022
DATA expconst<>+512(SB)/8, $0x0010000000000000
DATA expconst<>+520(SB)/8, $0x0010000000000000
DATA expconst<>+528(SB)/8, $0x0010000000000000
DATA expconst<>+536(SB)/8, $0x0010000000000000
DATA expconst<>+544(SB)/8, $-1023.0
DATA expconst<>+552(SB)/8, $-1023.0
DATA expconst<>+560(SB)/8, $-1023.0
DATA expconst<>+568(SB)/8, $-1023.0
DATA expconst<>+576(SB)/8, $-1075.0
DATA expconst<>+584(SB)/8, $-1075.0
DATA expconst<>+592(SB)/8, $-1075.0
DATA expconst<>+600(SB)/8, $-1075.0
DATA expconst<>+608(SB)/8, $1024.0
DATA expconst<>+616(SB)/8, $1024.0
DATA expconst<>+624(SB)/8, $1024.0
DATA expconst<>+632(SB)/8, $1024.0
DATA expconst<>+640(SB)/8, $0x7ff0000000000000
DATA expconst<>+648(SB)/8, $0x7ff0000000000000
DATA expconst<>+656(SB)/8, $0x7ff0000000000000
DATA expconst<>+664(SB)/8, $0x7ff0000000000000
GLOBL expconst<>(SB), RODATA|NOPTR, $672

#define LOG2E expconst<>+0(SB)
#define LN2U expconst<>+32(SB)
#define LN2L expconst<>+64(SB)
#define SIXTEENTH expconst<>+96(SB)
#define C8 expconst<>+128(SB)
#define C7 expconst<>+160(SB)
#define C6 expconst<>+192(SB)
#define C5 expconst<>+224(SB)
#define C4 expconst<>+256(SB)
#define C3 expconst<>+288(SB)
#define HALF expconst<>+320(SB)
#define ONE expconst<>+352(SB)
#define TWO expconst<>+384(SB)
#define MAGIC expconst<>+416(SB)
#define BIAS expconst<>+448(SB)
#define DENBIAS expconst<>+480(SB)
#define TINY expconst<>+512(SB)
#define KDEN expconst<>+544(SB)
#define KUNDER expconst<>+576(SB)
#define KOVER expconst<>+608(SB)
#define INF expconst<>+640(SB)

// Both kernels compute, per float64 lane, math.Exp(x) with the operations
// of its amd64 FMA path in the same order: k = x·log2e rounded to an
// integer, r = (x − k·ln2u − k·ln2l)/16 with fused steps, p = Horner's
// polynomial in r, three squarings p ← p·(p+2), e = p·(p+2)+1, then
// e·2^k.
//
// math.Exp rounds k by CVTSD2SL; the kernels add and subtract 1.5·2^52,
// which rounds to the same integer (to nearest, ties to even) wherever
// |x·log2e| < 2^51, and whose low mantissa bits give 2^k's exponent
// without a conversion. math.Exp then branches on k; the kernels select:
//   - k ≥ 1024 (x > 709.78 and +Inf included, but also x from about
//     709.44 on, where math.Exp gives +Inf although e^x is finite): +Inf;
//   - −1022 ≤ k ≤ 1023: e·2^k, one rounding (subnormal where e·2^k is);
//   - −1075 ≤ k ≤ −1023 (math.Exp's denormal path): (e·2^(k+1022))·2^−1022,
//     exact first and rounded once to a subnormal by the second product;
//   - k < −1075 (−Inf, and x below −2^31·ln2 where CVTSD2SL saturates,
//     included): +0;
//   - x NaN: x itself, payload and sign unchanged (math.Exp returns its
//     argument's bits).
// Nothing reads or writes MXCSR: like math.Exp, the kernels run under
// the goroutine's default rounding (to nearest, no FTZ/DAZ).

// func expAVX512(dst, x *float64, n int)
TEXT ·expAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   done512
	EXP_CONSTS512
	VBROADCASTSD KDEN, Z16
	VPXORQ       Z15, Z15, Z15
	VPBROADCASTQ DENBIAS, Z13
	VBROADCASTSD TINY, Z12
	VBROADCASTSD KUNDER, Z11
	VBROADCASTSD KOVER, Z10
	VBROADCASTSD INF, Z9

loop512:
	VMOVUPD      (SI), Z0      // x
	VMOVAPD      Z0, Z1
	EXP_CORE512                // k (Z2), e (Z1), k + 1023 in Z5's low bits
	VCMPPD       $18, Z16, Z2, K1 // k ≤ −1023
	VPADDQ       Z13, Z5, K1, Z5 // k + 2045 there
	VPSLLQ       $52, Z5, Z5   // 2^k, or 2^(k+1022)
	VMULPD       Z5, Z1, Z1
	VMULPD       Z12, Z1, K1, Z1 // ·2^−1022 where k ≤ −1023
	VCMPPD       $17, Z11, Z2, K2 // k < −1075
	VMOVAPD      Z15, K2, Z1
	VCMPPD       $29, Z10, Z2, K3 // k ≥ 1024
	VMOVAPD      Z9, K3, Z1
	VCMPPD       $3, Z0, Z0, K4 // x NaN
	VMOVAPD      Z0, K4, Z1
	VMOVUPD      Z1, (DI)
	ADDQ         $64, SI
	ADDQ         $64, DI
	DECQ         CX
	JNZ          loop512
	VZEROUPPER

done512:
	RET

// func expAVX2(dst, x *float64, n int)
TEXT ·expAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $2, CX
	JZ   done2
	VMOVUPD ONE, Y15
	VMOVUPD TWO, Y14
	VMOVUPD MAGIC, Y13

loop2:
	VMOVUPD      (SI), Y0      // x
	VMOVAPD      Y0, Y1
	EXP_CORE2(Y15, Y14, Y13)   // k (Y2), 1.5·2^52 + k (Y3), e (Y1)
	VCMPPD       $18, KDEN, Y2, Y6 // k ≤ −1023
	VANDPD       DENBIAS, Y6, Y7 // 1022 there, else 0
	VPADDQ       BIAS, Y3, Y5  // k + 1023 in the low bits
	VPADDQ       Y7, Y5, Y5    // k + 2045 where k ≤ −1023
	VPSLLQ       $52, Y5, Y5   // 2^k, or 2^(k+1022)
	VMULPD       Y5, Y1, Y1
	VBLENDVPD    Y6, TINY, Y15, Y7 // 2^−1022 where k ≤ −1023, else 1
	VMULPD       Y7, Y1, Y1
	VCMPPD       $17, KUNDER, Y2, Y6 // k < −1075
	VANDNPD      Y1, Y6, Y1
	VCMPPD       $29, KOVER, Y2, Y6 // k ≥ 1024
	VBLENDVPD    Y6, INF, Y1, Y1
	VCMPPD       $3, Y0, Y0, Y6 // x NaN
	VBLENDVPD    Y6, Y0, Y1, Y1
	VMOVUPD      Y1, (DI)
	ADDQ         $32, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          loop2
	VZEROUPPER

done2:
	RET
