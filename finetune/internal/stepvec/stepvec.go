// Package stepvec holds finetune's per-weight passes of an optimizer
// step: Adam's proposal with its metric and trust region (Adam.Propose),
// the parameter update with its finiteness check (Update, Adam.Update),
// Adam's moment update (Adam.Advance), momentum SGD's proposal, update
// and buffer (Momentum), the finiteness check alone (Finite) and the sums
// over the weights of finetune's stepScale and firstOrderChange
// (ScaleSums, DeltaDot).
//
// Each pass is a Go loop, and on amd64 with AVX-512F a kernel that runs
// it on 8 float64 lanes at once, the Go loop finishing the last len mod 8
// elements. The element-wise passes repeat the Go loop's IEEE operations
// lane by lane, in its order (no fused multiply-add: the Go compiler does
// not fuse at GOAMD64=v1; the divisions stay divisions), so that they
// give its bits (a NaN may carry another payload). The sums keep one
// partial sum per lane, added in lane order at the end, then the tail in
// index order: their last bits differ from the Go loop's index-order sum,
// but depend only on the length of the vectors.
package stepvec

import "github.com/paretonav/paretonav/internal/cpu"

// vector is whether the AVX-512 kernels run.
var vector = cpu.AVX512

// lanes is the number of elements a kernel handles at once.
const lanes = 8

// vectorPart returns how many of the first n elements the kernels take
// (a multiple of lanes) when vec is true, 0 otherwise.
func vectorPart(vec bool, n int) int {
	if !vec {
		return 0
	}
	return n &^ (lanes - 1)
}

// first returns the address of x's first element, nil for an empty x.
func first(x []float32) *float32 {
	if len(x) == 0 {
		return nil
	}
	return &x[0]
}
