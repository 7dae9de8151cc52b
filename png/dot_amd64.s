#include "textflag.h"

// dot64's AVX-512F kernel: Σ float64(x_c)·float64(y_c) over n float32s
// (a multiple of 8), the products summed in eight float64 lanes (no
// FMA: each product rounded, as in Go).

// func dot64AVX512(x, y *float32, n int, lanes *[8]float64)
TEXT ·dot64AVX512(SB), NOSPLIT, $0-32
	MOVQ   x+0(FP), AX
	MOVQ   y+8(FP), BX
	MOVQ   n+16(FP), CX
	MOVQ   lanes+24(FP), DI
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	SHRQ   $3, CX
	JZ     done
	TESTQ  $1, CX
	JZ     pairs
	VCVTPS2PD (AX), Z0
	VCVTPS2PD (BX), Z1
	VMULPD    Z1, Z0, Z0
	VADDPD    Z0, Z10, Z10
	ADDQ      $32, AX
	ADDQ      $32, BX
	SHRQ      $1, CX
	JZ        done
	JMP       loop

pairs:
	SHRQ $1, CX

loop:
	VCVTPS2PD (AX), Z0
	VCVTPS2PD (BX), Z1
	VCVTPS2PD 32(AX), Z2
	VCVTPS2PD 32(BX), Z3
	VMULPD    Z1, Z0, Z0
	VADDPD    Z0, Z10, Z10
	VMULPD    Z3, Z2, Z2
	VADDPD    Z2, Z11, Z11
	ADDQ      $64, AX
	ADDQ      $64, BX
	DECQ      CX
	JNZ       loop

done:
	VADDPD  Z11, Z10, Z10
	VMOVUPD Z10, (DI)
	VZEROUPPER
	RET
