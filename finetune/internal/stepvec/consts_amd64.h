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
