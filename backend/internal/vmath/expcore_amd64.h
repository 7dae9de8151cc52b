// The constants and steps of math.Exp's amd64 FMA path that Exp64's and
// Sigmoid32's kernels share (exp_amd64.s, sigmoid_amd64.s).

// The constants of math.Exp's amd64 FMA path (src/math/exp_amd64.s, after
// Shibata's SLEEF), the same literals, with 1.5·2^52 (MAGIC, for rounding
// to an integer), the exponent bias (BIAS) and −1023 (KDEN: math.Exp's
// subnormal path from k ≤ −1023 on), each stored four times (32 bytes, a
// YMM operand; the AVX-512 kernels broadcast the first copy). Each
// including file gets its own copy of the table.
DATA expcore<>+0(SB)/8, $1.4426950408889634073599246810018920
DATA expcore<>+8(SB)/8, $1.4426950408889634073599246810018920
DATA expcore<>+16(SB)/8, $1.4426950408889634073599246810018920
DATA expcore<>+24(SB)/8, $1.4426950408889634073599246810018920
DATA expcore<>+32(SB)/8, $0.69314718055966295651160180568695068359375
DATA expcore<>+40(SB)/8, $0.69314718055966295651160180568695068359375
DATA expcore<>+48(SB)/8, $0.69314718055966295651160180568695068359375
DATA expcore<>+56(SB)/8, $0.69314718055966295651160180568695068359375
DATA expcore<>+64(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA expcore<>+72(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA expcore<>+80(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA expcore<>+88(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA expcore<>+96(SB)/8, $0.0625
DATA expcore<>+104(SB)/8, $0.0625
DATA expcore<>+112(SB)/8, $0.0625
DATA expcore<>+120(SB)/8, $0.0625
DATA expcore<>+128(SB)/8, $2.4801587301587301587e-5
DATA expcore<>+136(SB)/8, $2.4801587301587301587e-5
DATA expcore<>+144(SB)/8, $2.4801587301587301587e-5
DATA expcore<>+152(SB)/8, $2.4801587301587301587e-5
DATA expcore<>+160(SB)/8, $1.9841269841269841270e-4
DATA expcore<>+168(SB)/8, $1.9841269841269841270e-4
DATA expcore<>+176(SB)/8, $1.9841269841269841270e-4
DATA expcore<>+184(SB)/8, $1.9841269841269841270e-4
DATA expcore<>+192(SB)/8, $1.3888888888888888889e-3
DATA expcore<>+200(SB)/8, $1.3888888888888888889e-3
DATA expcore<>+208(SB)/8, $1.3888888888888888889e-3
DATA expcore<>+216(SB)/8, $1.3888888888888888889e-3
DATA expcore<>+224(SB)/8, $8.3333333333333333333e-3
DATA expcore<>+232(SB)/8, $8.3333333333333333333e-3
DATA expcore<>+240(SB)/8, $8.3333333333333333333e-3
DATA expcore<>+248(SB)/8, $8.3333333333333333333e-3
DATA expcore<>+256(SB)/8, $4.1666666666666666667e-2
DATA expcore<>+264(SB)/8, $4.1666666666666666667e-2
DATA expcore<>+272(SB)/8, $4.1666666666666666667e-2
DATA expcore<>+280(SB)/8, $4.1666666666666666667e-2
DATA expcore<>+288(SB)/8, $1.6666666666666666667e-1
DATA expcore<>+296(SB)/8, $1.6666666666666666667e-1
DATA expcore<>+304(SB)/8, $1.6666666666666666667e-1
DATA expcore<>+312(SB)/8, $1.6666666666666666667e-1
DATA expcore<>+320(SB)/8, $0.5
DATA expcore<>+328(SB)/8, $0.5
DATA expcore<>+336(SB)/8, $0.5
DATA expcore<>+344(SB)/8, $0.5
DATA expcore<>+352(SB)/8, $1.0
DATA expcore<>+360(SB)/8, $1.0
DATA expcore<>+368(SB)/8, $1.0
DATA expcore<>+376(SB)/8, $1.0
DATA expcore<>+384(SB)/8, $2.0
DATA expcore<>+392(SB)/8, $2.0
DATA expcore<>+400(SB)/8, $2.0
DATA expcore<>+408(SB)/8, $2.0
DATA expcore<>+416(SB)/8, $6755399441055744.0
DATA expcore<>+424(SB)/8, $6755399441055744.0
DATA expcore<>+432(SB)/8, $6755399441055744.0
DATA expcore<>+440(SB)/8, $6755399441055744.0
DATA expcore<>+448(SB)/8, $1023
DATA expcore<>+456(SB)/8, $1023
DATA expcore<>+464(SB)/8, $1023
DATA expcore<>+472(SB)/8, $1023
DATA expcore<>+480(SB)/8, $-1023.0
DATA expcore<>+488(SB)/8, $-1023.0
DATA expcore<>+496(SB)/8, $-1023.0
DATA expcore<>+504(SB)/8, $-1023.0
GLOBL expcore<>(SB), RODATA|NOPTR, $512

#define LOG2E expcore<>+0(SB)
#define LN2U expcore<>+32(SB)
#define LN2L expcore<>+64(SB)
#define SIXTEENTH expcore<>+96(SB)
#define C8 expcore<>+128(SB)
#define C7 expcore<>+160(SB)
#define C6 expcore<>+192(SB)
#define C5 expcore<>+224(SB)
#define C4 expcore<>+256(SB)
#define C3 expcore<>+288(SB)
#define HALF expcore<>+320(SB)
#define ONE expcore<>+352(SB)
#define TWO expcore<>+384(SB)
#define MAGIC expcore<>+416(SB)
#define BIAS expcore<>+448(SB)
#define KDEN expcore<>+480(SB)

// EXP_CONSTS512 broadcasts the constants EXP_CORE512 reads into Z30 (log2e)
// to Z17 (the exponent bias) and Z14 (1.5·2^52).
#define EXP_CONSTS512 \
	VBROADCASTSD LOG2E, Z30; \
	VBROADCASTSD LN2U, Z29; \
	VBROADCASTSD LN2L, Z28; \
	VBROADCASTSD SIXTEENTH, Z27; \
	VBROADCASTSD C8, Z26; \
	VBROADCASTSD C7, Z25; \
	VBROADCASTSD C6, Z24; \
	VBROADCASTSD C5, Z23; \
	VBROADCASTSD C4, Z22; \
	VBROADCASTSD C3, Z21; \
	VBROADCASTSD HALF, Z20; \
	VBROADCASTSD ONE, Z19; \
	VBROADCASTSD TWO, Z18; \
	VPBROADCASTQ BIAS, Z17; \
	VBROADCASTSD MAGIC, Z14

// EXP_CORE512 takes the argument a in Z1 and leaves k = a·log2e rounded
// (Z2), 1.5·2^52 + k (Z3), e = p·(p+2)+1 after the three squarings (Z1)
// and k + 1023 in the low bits of Z5; Z4 is scratch. The scaling by 2^k
// and the special cases are the caller's.
#define EXP_CORE512 \
	VMULPD       Z30, Z1, Z2; \
	VADDPD       Z14, Z2, Z3; \
	VSUBPD       Z14, Z3, Z2; \
	VFNMADD231PD Z29, Z2, Z1; \
	VFNMADD231PD Z28, Z2, Z1; \
	VMULPD       Z27, Z1, Z1; \
	VMOVAPD      Z26, Z4; \
	VFMADD213PD  Z25, Z1, Z4; \
	VFMADD213PD  Z24, Z1, Z4; \
	VFMADD213PD  Z23, Z1, Z4; \
	VFMADD213PD  Z22, Z1, Z4; \
	VFMADD213PD  Z21, Z1, Z4; \
	VFMADD213PD  Z20, Z1, Z4; \
	VFMADD213PD  Z19, Z1, Z4; \
	VMULPD       Z4, Z1, Z1; \
	VADDPD       Z18, Z1, Z4; \
	VMULPD       Z4, Z1, Z1; \
	VADDPD       Z18, Z1, Z4; \
	VMULPD       Z4, Z1, Z1; \
	VADDPD       Z18, Z1, Z4; \
	VMULPD       Z4, Z1, Z1; \
	VADDPD       Z18, Z1, Z4; \
	VFMADD213PD  Z19, Z4, Z1; \
	VPADDQ       Z17, Z3, Z5

// EXP_CORE2 is EXP_CORE512 on four lanes (YMM) without the last step,
// with 1.0, 2.0 and 1.5·2^52 in the registers or operands one, two and
// magic, the other constants read from memory.
#define EXP_CORE2(one, two, magic) \
	VMULPD       LOG2E, Y1, Y2; \
	VADDPD       magic, Y2, Y3; \
	VSUBPD       magic, Y3, Y2; \
	VFNMADD231PD LN2U, Y2, Y1; \
	VFNMADD231PD LN2L, Y2, Y1; \
	VMULPD       SIXTEENTH, Y1, Y1; \
	VMOVUPD      C8, Y4; \
	VFMADD213PD  C7, Y1, Y4; \
	VFMADD213PD  C6, Y1, Y4; \
	VFMADD213PD  C5, Y1, Y4; \
	VFMADD213PD  C4, Y1, Y4; \
	VFMADD213PD  C3, Y1, Y4; \
	VFMADD213PD  HALF, Y1, Y4; \
	VFMADD213PD  one, Y1, Y4; \
	VMULPD       Y4, Y1, Y1; \
	VADDPD       two, Y1, Y4; \
	VMULPD       Y4, Y1, Y1; \
	VADDPD       two, Y1, Y4; \
	VMULPD       Y4, Y1, Y1; \
	VADDPD       two, Y1, Y4; \
	VMULPD       Y4, Y1, Y1; \
	VADDPD       two, Y1, Y4; \
	VFMADD213PD  one, Y4, Y1
