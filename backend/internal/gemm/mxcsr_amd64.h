// Subnormal float32 operands and results cost a microcode assist of about a
// hundred cycles each on Intel CPUs (a backward pass meets them deep in a
// network: BenchmarkSgemmSubnormal measured 0.82 against 92 GFLOP/s), so
// every kernel runs with MXCSR's flush-to-zero (bit 15) and
// denormals-are-zero (bit 6) set, as PyTorch's set_flush_denormal(True) and
// oneDNN do, and restores the caller's MXCSR before it returns. Go does not
// preempt assembly functions asynchronously, so no other goroutine runs
// with the changed MXCSR. The frame holds the saved and the changed word.
#define FLUSH_SUBNORMALS \
	STMXCSR mxcsr-8(SP); \
	STMXCSR mxcsr-4(SP); \
	ORL $0x8040, mxcsr-4(SP); \
	LDMXCSR mxcsr-4(SP)

#define RESTORE_MXCSR \
	LDMXCSR mxcsr-8(SP)
