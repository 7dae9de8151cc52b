// The steps of math.Exp's amd64 FMA path that Exp64's and Sigmoid32's
// kernels share (exp_amd64.s, sigmoid_amd64.s): each including file
// defines the constants LOG2E, LN2U, LN2L, SIXTEENTH, C8 … C3, HALF, ONE,
// TWO, BIAS and MAGIC (four float64 copies each).

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
