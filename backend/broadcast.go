package backend

import "fmt"

// broadcastShape returns the numpy broadcast of shapes a and b.
func broadcastShape(a, b []int) ([]int, error) {
	r := len(a)
	if len(b) > r {
		r = len(b)
	}
	out := make([]int, r)
	for i := 0; i < r; i++ {
		da, db := 1, 1
		if j := len(a) - r + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - r + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db, db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, fmt.Errorf("shapes %v and %v do not broadcast (dimension %d: %d vs %d)", a, b, i, da, db)
		}
	}
	return out, nil
}

// broadcastIndex returns, for each element of out (row-major), the flat
// index of the element of an input of shape in that numpy broadcasting
// maps to it. It returns nil when in equals out (the identity map).
func broadcastIndex(in, out []int) []int {
	if equalShape(in, out) {
		return nil
	}
	r := len(out)
	st := make([]int, r) // stride of in along each out dim (0 when broadcast)
	ist := strides(in)
	for i := 0; i < r; i++ {
		if j := len(in) - r + i; j >= 0 && in[j] != 1 {
			st[i] = ist[j]
		}
	}
	n := numel(out)
	idx := make([]int, n)
	if n == 0 {
		return idx
	}
	ctr := make([]int, r)
	off := 0
	for i := 0; i < n; i++ {
		idx[i] = off
		for d := r - 1; d >= 0; d-- {
			ctr[d]++
			off += st[d]
			if ctr[d] < out[d] {
				break
			}
			off -= st[d] * out[d]
			ctr[d] = 0
		}
	}
	return idx
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
