package onnxops

import (
	"fmt"
	"math"
	"testing"
)

// TestTransposeLast2 checks transpose32 on transposes that swap the last
// two axes (the 8×8 blocks of transposeLast2 where the CPU has AVX2, the
// walk elsewhere and for matrices under 8) against the index arithmetic of
// the definition, bit for bit: −0 kept forward, made +0 under plusZero (a
// gradient), NaNs and infinities moved as they are.
func TestTransposeLast2(t *testing.T) {
	cases := []struct {
		xs   []int
		perm []int64
	}{
		{[]int{4, 32, 64}, []int64{0, 2, 1}},
		{[]int{3, 13, 21}, []int64{0, 2, 1}},
		{[]int{1, 9, 8}, []int64{0, 2, 1}},
		{[]int{17, 9}, []int64{1, 0}},
		{[]int{2, 20, 3, 3}, []int64{0, 2, 3, 1}},
		{[]int{2, 7, 16}, []int64{0, 2, 1}},
		{[]int{5, 1, 12, 1, 10}, []int64{0, 4, 3, 1, 2}},
	}
	for _, c := range cases {
		for _, pz := range []bool{false, true} {
			t.Run(fmt.Sprint(c.xs, c.perm, pz), func(t *testing.T) {
				n := 1
				for _, d := range c.xs {
					n *= d
				}
				src := make([]float32, n)
				for i := range src {
					switch i % 13 {
					case 2:
						src[i] = float32(math.Copysign(0, -1))
					case 6:
						src[i] = float32(math.Inf(1))
					case 9:
						src[i] = float32(math.NaN())
					default:
						src[i] = float32(i)*0.5 - 3
					}
				}
				// the definition: out index (i_perm[0], …) takes in index (i_0, …)
				r := len(c.xs)
				ist := make([]int, r)
				acc := 1
				for a := r - 1; a >= 0; a-- {
					ist[a] = acc
					acc *= c.xs[a]
				}
				want := make([]float32, n)
				ctr := make([]int, r) // position in the output
				for o := range want {
					off := 0
					for a := range r {
						off += ctr[a] * ist[c.perm[a]]
					}
					v := src[off]
					if pz {
						v = 0 + v
					}
					want[o] = v
					for a := r - 1; a >= 0; a-- {
						ctr[a]++
						if ctr[a] < c.xs[c.perm[a]] {
							break
						}
						ctr[a] = 0
					}
				}
				got := make([]float32, n)
				transpose32(got, src, c.xs, c.perm, pz)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("out[%d] = %v (bits %08x), want %v (bits %08x)", i, got[i], math.Float32bits(got[i]),
							want[i], math.Float32bits(want[i]))
					}
				}
			})
		}
	}
}
