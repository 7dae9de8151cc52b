#include "textflag.h"
#include "mxcsr_amd64.h"

// The 12×32 AVX-512F kernels: sgemmKernel6x32 and its variants for twelve
// rows of a, two micro-panels at once.

// ZERO_12X32 clears the 24 ZMM accumulators Z0–Z23 of the 12×32 kernels.
#define ZERO_12X32 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15; \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23

// STORE_ADD_12X32 adds the 12×32 tile in Z0–Z23 (row r in Z2r, Z2r+1)
// into c at DX (rows R8 bytes apart); STORE_OVER_12X32 writes it over c.
#define STORE_ADD_12X32 \
	VADDPS (DX), Z0, Z0; \
	VMOVUPS Z0, (DX); \
	VADDPS 64(DX), Z1, Z1; \
	VMOVUPS Z1, 64(DX); \
	ADDQ R8, DX; \
	VADDPS (DX), Z2, Z2; \
	VMOVUPS Z2, (DX); \
	VADDPS 64(DX), Z3, Z3; \
	VMOVUPS Z3, 64(DX); \
	ADDQ R8, DX; \
	VADDPS (DX), Z4, Z4; \
	VMOVUPS Z4, (DX); \
	VADDPS 64(DX), Z5, Z5; \
	VMOVUPS Z5, 64(DX); \
	ADDQ R8, DX; \
	VADDPS (DX), Z6, Z6; \
	VMOVUPS Z6, (DX); \
	VADDPS 64(DX), Z7, Z7; \
	VMOVUPS Z7, 64(DX); \
	ADDQ R8, DX; \
	VADDPS (DX), Z8, Z8; \
	VMOVUPS Z8, (DX); \
	VADDPS 64(DX), Z9, Z9; \
	VMOVUPS Z9, 64(DX); \
	ADDQ R8, DX; \
	VADDPS (DX), Z10, Z10; \
	VMOVUPS Z10, (DX); \
	VADDPS 64(DX), Z11, Z11; \
	VMOVUPS Z11, 64(DX); \
	ADDQ R8, DX; \
	VADDPS (DX), Z12, Z12; \
	VMOVUPS Z12, (DX); \
	VADDPS 64(DX), Z13, Z13; \
	VMOVUPS Z13, 64(DX); \
	ADDQ R8, DX; \
	VADDPS (DX), Z14, Z14; \
	VMOVUPS Z14, (DX); \
	VADDPS 64(DX), Z15, Z15; \
	VMOVUPS Z15, 64(DX); \
	ADDQ R8, DX; \
	VADDPS (DX), Z16, Z16; \
	VMOVUPS Z16, (DX); \
	VADDPS 64(DX), Z17, Z17; \
	VMOVUPS Z17, 64(DX); \
	ADDQ R8, DX; \
	VADDPS (DX), Z18, Z18; \
	VMOVUPS Z18, (DX); \
	VADDPS 64(DX), Z19, Z19; \
	VMOVUPS Z19, 64(DX); \
	ADDQ R8, DX; \
	VADDPS (DX), Z20, Z20; \
	VMOVUPS Z20, (DX); \
	VADDPS 64(DX), Z21, Z21; \
	VMOVUPS Z21, 64(DX); \
	ADDQ R8, DX; \
	VADDPS (DX), Z22, Z22; \
	VMOVUPS Z22, (DX); \
	VADDPS 64(DX), Z23, Z23; \
	VMOVUPS Z23, 64(DX)


#define STORE_OVER_12X32 \
	VMOVUPS Z0, (DX); \
	VMOVUPS Z1, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z2, (DX); \
	VMOVUPS Z3, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z4, (DX); \
	VMOVUPS Z5, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z6, (DX); \
	VMOVUPS Z7, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z8, (DX); \
	VMOVUPS Z9, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z10, (DX); \
	VMOVUPS Z11, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z12, (DX); \
	VMOVUPS Z13, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z14, (DX); \
	VMOVUPS Z15, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z16, (DX); \
	VMOVUPS Z17, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z18, (DX); \
	VMOVUPS Z19, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z20, (DX); \
	VMOVUPS Z21, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z22, (DX); \
	VMOVUPS Z23, 64(DX)

// PREFETCH_C12X32 fetches the 12 rows of the tile of c at DX (R8 bytes
// apart) into L1; it uses BX.
#define PREFETCH_C12X32 \
	MOVQ DX, BX; \
	PREFETCHT0 (BX); \
	PREFETCHT0 64(BX); \
	ADDQ R8, BX; \
	PREFETCHT0 (BX); \
	PREFETCHT0 64(BX); \
	ADDQ R8, BX; \
	PREFETCHT0 (BX); \
	PREFETCHT0 64(BX); \
	ADDQ R8, BX; \
	PREFETCHT0 (BX); \
	PREFETCHT0 64(BX); \
	ADDQ R8, BX; \
	PREFETCHT0 (BX); \
	PREFETCHT0 64(BX); \
	ADDQ R8, BX; \
	PREFETCHT0 (BX); \
	PREFETCHT0 64(BX); \
	ADDQ R8, BX; \
	PREFETCHT0 (BX); \
	PREFETCHT0 64(BX); \
	ADDQ R8, BX; \
	PREFETCHT0 (BX); \
	PREFETCHT0 64(BX); \
	ADDQ R8, BX; \
	PREFETCHT0 (BX); \
	PREFETCHT0 64(BX); \
	ADDQ R8, BX; \
	PREFETCHT0 (BX); \
	PREFETCHT0 64(BX); \
	ADDQ R8, BX; \
	PREFETCHT0 (BX); \
	PREFETCHT0 64(BX); \
	ADDQ R8, BX; \
	PREFETCHT0 (BX); \
	PREFETCHT0 64(BX)

// FMA12X32 is the arithmetic of one step of l of the 12×32 kernels: row l
// of the b panel (two vectors at DI) times six values of the first packed a
// panel (at SI) into Z0–Z11 and six of the second (at SI+R11) into Z12–Z23.
#define FMA12X32 \
	VMOVUPS (DI), Z24; \
	VMOVUPS 64(DI), Z25; \
	VBROADCASTSS 0(SI), Z26; \
	VFMADD231PS Z24, Z26, Z0; \
	VFMADD231PS Z25, Z26, Z1; \
	VBROADCASTSS 4(SI), Z27; \
	VFMADD231PS Z24, Z27, Z2; \
	VFMADD231PS Z25, Z27, Z3; \
	VBROADCASTSS 8(SI), Z26; \
	VFMADD231PS Z24, Z26, Z4; \
	VFMADD231PS Z25, Z26, Z5; \
	VBROADCASTSS 12(SI), Z27; \
	VFMADD231PS Z24, Z27, Z6; \
	VFMADD231PS Z25, Z27, Z7; \
	VBROADCASTSS 16(SI), Z26; \
	VFMADD231PS Z24, Z26, Z8; \
	VFMADD231PS Z25, Z26, Z9; \
	VBROADCASTSS 20(SI), Z27; \
	VFMADD231PS Z24, Z27, Z10; \
	VFMADD231PS Z25, Z27, Z11; \
	VBROADCASTSS 0(SI)(R11*1), Z26; \
	VFMADD231PS Z24, Z26, Z12; \
	VFMADD231PS Z25, Z26, Z13; \
	VBROADCASTSS 4(SI)(R11*1), Z27; \
	VFMADD231PS Z24, Z27, Z14; \
	VFMADD231PS Z25, Z27, Z15; \
	VBROADCASTSS 8(SI)(R11*1), Z26; \
	VFMADD231PS Z24, Z26, Z16; \
	VFMADD231PS Z25, Z26, Z17; \
	VBROADCASTSS 12(SI)(R11*1), Z27; \
	VFMADD231PS Z24, Z27, Z18; \
	VFMADD231PS Z25, Z27, Z19; \
	VBROADCASTSS 16(SI)(R11*1), Z26; \
	VFMADD231PS Z24, Z26, Z20; \
	VFMADD231PS Z25, Z26, Z21; \
	VBROADCASTSS 20(SI)(R11*1), Z27; \
	VFMADD231PS Z24, Z27, Z22; \
	VFMADD231PS Z25, Z27, Z23

// STEP12X32 is one step of l of sgemmKernel12x32 (b packed);
// STEP12X32S is one of sgemmKernel12x32s (b unpacked: its next row R9
// bytes on).
#define STEP12X32 \
	FMA12X32; \
	ADDQ $24, SI; \
	ADDQ $128, DI

#define STEP12X32S \
	FMA12X32; \
	ADDQ $24, SI; \
	ADDQ R9, DI

// STEP12X32A is STEP12X32 with a in place: its twelve rows lda (R9) bytes
// apart, three from each of SI, R11, R12 and R13 (3·lda apart).
#define STEP12X32A \
	VMOVUPS (DI), Z24; \
	VMOVUPS 64(DI), Z25; \
	VBROADCASTSS (SI), Z26; \
	VFMADD231PS Z24, Z26, Z0; \
	VFMADD231PS Z25, Z26, Z1; \
	VBROADCASTSS (SI)(R9*1), Z27; \
	VFMADD231PS Z24, Z27, Z2; \
	VFMADD231PS Z25, Z27, Z3; \
	VBROADCASTSS (SI)(R9*2), Z26; \
	VFMADD231PS Z24, Z26, Z4; \
	VFMADD231PS Z25, Z26, Z5; \
	VBROADCASTSS (R11), Z27; \
	VFMADD231PS Z24, Z27, Z6; \
	VFMADD231PS Z25, Z27, Z7; \
	VBROADCASTSS (R11)(R9*1), Z26; \
	VFMADD231PS Z24, Z26, Z8; \
	VFMADD231PS Z25, Z26, Z9; \
	VBROADCASTSS (R11)(R9*2), Z27; \
	VFMADD231PS Z24, Z27, Z10; \
	VFMADD231PS Z25, Z27, Z11; \
	VBROADCASTSS (R12), Z26; \
	VFMADD231PS Z24, Z26, Z12; \
	VFMADD231PS Z25, Z26, Z13; \
	VBROADCASTSS (R12)(R9*1), Z27; \
	VFMADD231PS Z24, Z27, Z14; \
	VFMADD231PS Z25, Z27, Z15; \
	VBROADCASTSS (R12)(R9*2), Z26; \
	VFMADD231PS Z24, Z26, Z16; \
	VFMADD231PS Z25, Z26, Z17; \
	VBROADCASTSS (R13), Z27; \
	VFMADD231PS Z24, Z27, Z18; \
	VFMADD231PS Z25, Z27, Z19; \
	VBROADCASTSS (R13)(R9*1), Z26; \
	VFMADD231PS Z24, Z26, Z20; \
	VFMADD231PS Z25, Z26, Z21; \
	VBROADCASTSS (R13)(R9*2), Z27; \
	VFMADD231PS Z24, Z27, Z22; \
	VFMADD231PS Z25, Z27, Z23; \
	ADDQ $4, SI; \
	ADDQ $4, R11; \
	ADDQ $4, R12; \
	ADDQ $4, R13; \
	ADDQ $128, DI

// sgemmKernel12x32 is sgemmKernel6x32 over two adjacent packed micro-panels
// of a (a and a + 6·kc values): a 12×32 tile, 24 accumulators, so that
// each pair of vector loads of b feeds 24 FMAs instead of 12 (hot in L1:
// 225 against 200 GFLOP/s on one core).
// func sgemmKernel12x32(kc int, a, b, c *float32, ldc, over int)
TEXT ·sgemmKernel12x32(SB), NOSPLIT, $8-48
	FLUSH_SUBNORMALS
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	LEAQ (CX)(CX*2), R11
	SHLQ $3, R11 // 6·kc values: the second panel
	MOVQ over+40(FP), R10
	TESTQ $2, R10
	JZ dnopfc
	PREFETCH_C12X32
dnopfc:
	ZERO_12X32
	TESTQ CX, CX
	JZ dstore
dloop:
	STEP12X32
	DECQ CX
	JNZ dloop
dstore:
	MOVQ over+40(FP), R10
	TESTQ $1, R10
	JNZ dstore_over
	STORE_ADD_12X32
	VZEROUPPER
	RESTORE_MXCSR
	RET
dstore_over:
	STORE_OVER_12X32
	VZEROUPPER
	RESTORE_MXCSR
	RET

// sgemmKernel12x32s is sgemmKernel12x32 reading B unpacked: row l of the
// kc×32 panel at b + l·ldb (sgemmKernel6x32s's far prefetches included).
// func sgemmKernel12x32s(kc int, a, b, c *float32, ldc, ldb, over, far int)
TEXT ·sgemmKernel12x32s(SB), NOSPLIT, $8-64
	FLUSH_SUBNORMALS
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	LEAQ (CX)(CX*2), R11
	SHLQ $3, R11
	MOVQ over+48(FP), R10
	TESTQ $2, R10
	JZ tnopfc
	PREFETCH_C12X32
tnopfc:
	MOVQ ldb+40(FP), R9
	SHLQ $2, R9
	ZERO_12X32
	TESTQ CX, CX
	JZ tstore
	MOVQ far+56(FP), R10
	TESTQ R10, R10
	JNZ tloop_far
tloop:
	STEP12X32S
	DECQ CX
	JNZ tloop
	JMP tstore
tloop_far:
	PREFETCHT0 128(DI)
	PREFETCHT0 192(DI)
	STEP12X32S
	DECQ CX
	JNZ tloop_far
tstore:
	MOVQ over+48(FP), R10
	TESTQ $1, R10
	JNZ tstore_over
	STORE_ADD_12X32
	VZEROUPPER
	RESTORE_MXCSR
	RET
tstore_over:
	STORE_OVER_12X32
	VZEROUPPER
	RESTORE_MXCSR
	RET

// sgemmKernel12x32a is sgemmKernel6x32a for twelve rows of a in place (row
// i at a + i·lda).
// func sgemmKernel12x32a(kc int, a *float32, lda int, b, c *float32, ldc, over int)
TEXT ·sgemmKernel12x32a(SB), NOSPLIT, $8-56
	FLUSH_SUBNORMALS
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R9
	SHLQ $2, R9
	LEAQ (SI)(R9*2), R11
	ADDQ R9, R11
	LEAQ (R11)(R9*2), R12
	ADDQ R9, R12
	LEAQ (R12)(R9*2), R13
	ADDQ R9, R13
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R8
	SHLQ $2, R8
	MOVQ over+48(FP), R10
	TESTQ $2, R10
	JZ unopfc
	PREFETCH_C12X32
unopfc:
	ZERO_12X32
	TESTQ CX, CX
	JZ ustore
uloop:
	STEP12X32A
	DECQ CX
	JNZ uloop
ustore:
	MOVQ over+48(FP), R10
	TESTQ $1, R10
	JNZ ustore_over
	STORE_ADD_12X32
	VZEROUPPER
	RESTORE_MXCSR
	RET
ustore_over:
	STORE_OVER_12X32
	VZEROUPPER
	RESTORE_MXCSR
	RET

// sgemmKernel12x32o is sgemmKernel6x32o over two adjacent packed
// micro-panels of a, as sgemmKernel12x32.
// func sgemmKernel12x32o(kc int, a, b, c *float32, ldc int, offs *int, over int)
TEXT ·sgemmKernel12x32o(SB), NOSPLIT, $8-56
	FLUSH_SUBNORMALS
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), R9
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	LEAQ (CX)(CX*2), R11
	SHLQ $3, R11
	MOVQ over+48(FP), R10
	TESTQ $2, R10
	JZ rnopfc
	PREFETCH_C12X32
rnopfc:
	MOVQ offs+40(FP), R12
	ZERO_12X32
	TESTQ CX, CX
	JZ rstore
rloop:
	MOVQ (R12), DI
	LEAQ (R9)(DI*4), DI
	FMA12X32
	ADDQ $24, SI
	ADDQ $8, R12
	DECQ CX
	JNZ rloop
rstore:
	MOVQ over+48(FP), R10
	TESTQ $1, R10
	JNZ rstore_over
	STORE_ADD_12X32
	VZEROUPPER
	RESTORE_MXCSR
	RET
rstore_over:
	STORE_OVER_12X32
	VZEROUPPER
	RESTORE_MXCSR
	RET
