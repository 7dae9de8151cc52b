package onnxops

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/parallel"
)

// TestConcatBlocksSplit checks concatFwd and concatBwd, which split their
// copies over the cores by element ranges that cut blocks anywhere,
// against a plain loop over (outer index, input, element), for block
// sizes that are odd, empty, or large enough to be split (more than
// 2·parallel.ElemChunk values), into dirty buffers (fillingKernel32).
func TestConcatBlocksSplit(t *testing.T) {
	for _, tc := range []struct {
		outer int
		sizes []int
	}{
		{1, []int{5}},
		{3, []int{2, 0, 7}},
		{2, []int{3 * parallel.ElemChunk / 2, 4097}},
		{4, []int{parallel.ElemChunk + 1, parallel.ElemChunk - 3, 11}},
		{7, []int{12345, 0, 23456, 999}},
	} {
		t.Run(fmt.Sprint(tc.outer, tc.sizes), func(t *testing.T) {
			rng := rand.New(rand.NewSource(1))
			in := make([][]float32, len(tc.sizes))
			row := 0
			for k, sz := range tc.sizes {
				in[k] = make([]float32, tc.outer*sz)
				for i := range in[k] {
					in[k][i] = rng.Float32()
				}
				row += sz
			}
			var want []float32
			for o := 0; o < tc.outer; o++ {
				for k, sz := range tc.sizes {
					want = append(want, in[k][o*sz:(o+1)*sz]...)
				}
			}
			got := onnxtest.Dirty32(tc.outer * row)
			concatFwd(got, in, tc.sizes, tc.outer)
			if !slices.Equal(got, want) {
				t.Fatalf("concatFwd differs from the plain loop")
			}
			for k := range tc.sizes {
				back := onnxtest.Dirty32(len(in[k]))
				concatBwd(k, back, want, tc.sizes, tc.outer)
				if !slices.Equal(back, in[k]) {
					t.Fatalf("concatBwd of input %d differs from the input", k)
				}
			}
		})
	}
}
