#include "textflag.h"
#include "expcore_amd64.h"

// The constants of math.Exp's scaling by 2^k beyond expcore_amd64.h's,
// each stored four times: 1022 (DENBIAS), 2^−1022 (TINY), and the bounds
// of k for underflow (KUNDER) and overflow (KOVER), and +Inf.
DATA expconst<>+0(SB)/8, $1022
DATA expconst<>+8(SB)/8, $1022
DATA expconst<>+16(SB)/8, $1022
DATA expconst<>+24(SB)/8, $1022
DATA expconst<>+32(SB)/8, $0x0010000000000000
DATA expconst<>+40(SB)/8, $0x0010000000000000
DATA expconst<>+48(SB)/8, $0x0010000000000000
DATA expconst<>+56(SB)/8, $0x0010000000000000
DATA expconst<>+64(SB)/8, $-1075.0
DATA expconst<>+72(SB)/8, $-1075.0
DATA expconst<>+80(SB)/8, $-1075.0
DATA expconst<>+88(SB)/8, $-1075.0
DATA expconst<>+96(SB)/8, $1024.0
DATA expconst<>+104(SB)/8, $1024.0
DATA expconst<>+112(SB)/8, $1024.0
DATA expconst<>+120(SB)/8, $1024.0
DATA expconst<>+128(SB)/8, $0x7ff0000000000000
DATA expconst<>+136(SB)/8, $0x7ff0000000000000
DATA expconst<>+144(SB)/8, $0x7ff0000000000000
DATA expconst<>+152(SB)/8, $0x7ff0000000000000
GLOBL expconst<>(SB), RODATA|NOPTR, $160

#define DENBIAS expconst<>+0(SB)
#define TINY expconst<>+32(SB)
#define KUNDER expconst<>+64(SB)
#define KOVER expconst<>+96(SB)
#define INF expconst<>+128(SB)

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
