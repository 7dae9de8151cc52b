// Package shape is the arithmetic of tensor shapes that the graph builder,
// the op lowerings, the loss heads and the executor share: element
// counts, row-major strides and multi-indices, and numpy broadcasting.
package shape

import "fmt"

// Numel returns the number of elements of shape s (1 for a scalar).
func Numel(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// Strides returns the row-major strides of shape s.
func Strides(s []int) []int {
	st := make([]int, len(s))
	acc := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= s[i]
	}
	return st
}

// NextIndex advances the row-major multi-index ctr within shape by one,
// wrapping to all zeros after the last element.
func NextIndex(ctr, shape []int) {
	for d := len(ctr) - 1; d >= 0; d-- {
		ctr[d]++
		if ctr[d] < shape[d] {
			return
		}
		ctr[d] = 0
	}
}

// Identity returns 0..n-1.
func Identity(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// String formats a shape for messages.
func String(s []int) string { return fmt.Sprint(s) }
