#include "textflag.h"

// AddTo64's and AddNormTo64's AVX-512F kernels: per float64 lane the Go
// loops' operations in their order.

// func addTo64AVX512(acc *float64, gr *float32, n int)
TEXT ·addTo64AVX512(SB), NOSPLIT, $0-24
	MOVQ acc+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   adddone

addloop:
	VCVTPS2PD (SI), Z0
	VADDPD    (DI), Z0, Z0
	VMOVUPD   Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       addloop
	VZEROUPPER

adddone:
	RET

// func addNormTo64AVX512(acc *float64, gr, x *float32, n int, mu, inv float64)
TEXT ·addNormTo64AVX512(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ x+16(FP), BX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   normdone
	VBROADCASTSD mu+32(FP), Z16
	VBROADCASTSD inv+40(FP), Z17

normloop:
	VCVTPS2PD (BX), Z1     // x
	VSUBPD    Z16, Z1, Z1  // x − mu
	VCVTPS2PD (SI), Z0     // g
	VMULPD    Z1, Z0, Z0   // g·(x − mu)
	VMULPD    Z17, Z0, Z0  // ·inv
	VADDPD    (DI), Z0, Z0 // acc + ·
	VMOVUPD   Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, BX
	ADDQ      $64, DI
	DECQ      CX
	JNZ       normloop
	VZEROUPPER

normdone:
	RET
