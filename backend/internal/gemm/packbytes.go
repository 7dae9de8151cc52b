package gemm

// PackBytes is the memory of the packing buffers one product holds with
// workers goroutines: a panel of A per worker and one of B, in bytes.
// Every product takes whole buffers, however small its operands, so a
// small model's step holds them too.
func PackBytes(workers int) int64 {
	return 4 * (int64(workers)*int64(poolA.size) + int64(poolB.size))
}
