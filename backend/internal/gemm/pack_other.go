//go:build !amd64

package gemm

// packAsm is false outside amd64: pack.go's pure-Go loops do all packing.
var packAsm = false

// transpose8, packA6, packA6Scaled and packA6TPanels are never called
// outside amd64 (packAsm is false); they exist so that pack.go compiles.
func transpose8(n8 int, src *float32, lds int, dst *float32, ldd int) { panic("gemm: no asm") }

func packA6(n8 int, src *float32, lds int, dst *float32) { panic("gemm: no asm") }

func packA6Scaled(n8 int, src *float32, lds int, dst *float32, alpha float32) {
	panic("gemm: no asm")
}

func packA6TPanels(kc, np int, src *float32, lds int, dst *float32, alpha float32) {
	panic("gemm: no asm")
}
