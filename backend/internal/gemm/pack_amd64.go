package gemm

import "github.com/paretonav/paretonav/internal/cpu"

// packAsm reports whether the AVX2 packing kernels of pack_amd64.s run on
// this CPU (the pure-Go loops of pack.go pack otherwise, and at the edges).
var packAsm = cpu.AVX2

// transpose8 copies an 8×(8·n8) block of rows src, src+lds, … into
// columns: dst[l*ldd+j] = src[j*lds+l] for j < 8, l < 8·n8 (n8 ≥ 1).
//
//go:noescape
func transpose8(n8 int, src *float32, lds int, dst *float32, ldd int)

// packA6 packs 8·n8 columns of the 6 rows src, src+lds, … as packA's
// micro-panel: dst[l*6+i] = src[i*lds+l] (n8 ≥ 1); it writes nothing past
// dst[48·n8-1].
//
//go:noescape
func packA6(n8 int, src *float32, lds int, dst *float32)

// packA6Scaled is packA6 times alpha: dst[l*6+i] = alpha·src[i*lds+l].
//
//go:noescape
func packA6Scaled(n8 int, src *float32, lds int, dst *float32, alpha float32)

// packA6TPanels packs np adjacent micro-panels of a transposed a (6
// contiguous values per step), l-outer so that each row of a is read once,
// contiguously: dst[p*6*kc + l*6 + i] = alpha·src[l*lds + p*6 + i]
// (kc, np ≥ 1).
//
//go:noescape
func packA6TPanels(kc, np int, src *float32, lds int, dst *float32, alpha float32)
