// The kernels' constants (consts, adam.go), one per ZMM register from
// Z16 up, broadcast from the struct at c.
#define LOADCONSTS(c) \
	VBROADCASTSD 0(c), Z16;  /* β1 */ \
	VBROADCASTSD 8(c), Z17;  /* 1−β1 */ \
	VBROADCASTSD 16(c), Z18; /* β2 */ \
	VBROADCASTSD 24(c), Z19; /* 1−β2 */ \
	VBROADCASTSD 32(c), Z20; /* c1 */ \
	VBROADCASTSD 40(c), Z21; /* c2 */ \
	VBROADCASTSD 48(c), Z22; /* ε */ \
	VBROADCASTSD 56(c), Z23; /* r0 = b²/d */ \
	VBROADCASTSD 64(c), Z24; /* 1 */ \
	VBROADCASTSD 72(c), Z25; /* +Inf */ \
	VBROADCASTSD 80(c), Z28; /* rmax */ \
	VBROADCASTSD 88(c), Z29; /* √r0 */ \
	VPXORQ       Z26, Z26, Z26 /* 0 */

// ADAMSTEP is Adam's step from the gradient g (Z0) and the moments m0
// (Z1) and w0 (Z2), in the Go loop's order of operations: m = β1·m0 +
// (1−β1)·g, w = β2·w0 + (1−β2)·g·g, d = √(w/c2) + ε (Z6) and the step
// (m/c1)/d (Z5); Z7 is overwritten.
#define ADAMSTEP \
	VMULPD  Z16, Z1, Z5; /* β1·m0 */ \
	VMULPD  Z17, Z0, Z6; /* (1−β1)·g */ \
	VADDPD  Z6, Z5, Z5;  /* m */ \
	VMULPD  Z18, Z2, Z6; /* β2·w0 */ \
	VMULPD  Z19, Z0, Z7; /* (1−β2)·g */ \
	VMULPD  Z0, Z7, Z7;  /* ·g */ \
	VADDPD  Z7, Z6, Z6;  /* w */ \
	VDIVPD  Z21, Z6, Z6; /* w/c2 */ \
	VSQRTPD Z6, Z6; \
	VADDPD  Z22, Z6, Z6; /* d = √(w/c2) + ε */ \
	VDIVPD  Z20, Z5, Z5; /* m/c1 */ \
	VDIVPD  Z6, Z5, Z5   /* (m/c1)/d */
