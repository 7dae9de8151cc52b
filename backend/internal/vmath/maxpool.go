package vmath

import "fmt"

// MaxPool2x2Idx32 is a 2×2, stride-2 max pool's choice of indices over
// a plane x of rows w values apart, for the windows that hold no NaN:
// idx[oi·ow+j] = base + i, where i is the flat index in x of the first
// maximum of x[r], x[r+1], x[r+w], x[r+w+1] (r = 2oi·w + 2j, that order;
// a strictly greater value replaces the best, so −0 and +0 tie). It
// writes rows oi = 0, 1, … up to the first that holds a NaN among its
// windows' values, whose outputs it may leave partly written, and returns
// how many rows it wrote: oh when no window holds a NaN; 0 without
// AVX-512, where the caller's loop does it all. It reads no value of a
// row past its first 2·ow.
func MaxPool2x2Idx32(x []float32, w int, idx []int64, oh, ow, base int) int {
	if !active.hasMaxPool() || oh <= 0 || ow <= 0 {
		return 0
	}
	if 2*ow > w || len(x) < (2*oh-1)*w+2*ow || len(idx) < oh*ow {
		panic(fmt.Sprintf("vmath: MaxPool2x2Idx32: %d×%d windows over rows of %d in %d values, %d indices", oh, ow, w, len(x), len(idx)))
	}
	return maxPool2x2AVX512(&x[0], w, &idx[0], oh, ow, base)
}
