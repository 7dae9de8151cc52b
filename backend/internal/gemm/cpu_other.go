//go:build !amd64

package gemm

// No micro-kernel outside amd64: Sgemm calls gonum's blas32.

// kernels lists the micro-kernels this CPU can run: none.
func kernels() []*kernel { return nil }
