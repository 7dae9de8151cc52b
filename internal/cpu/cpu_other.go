//go:build !amd64

package cpu

// detect: no AVX outside amd64.
func detect() (avx2, avx512 bool) { return false, false }
