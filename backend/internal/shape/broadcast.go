package shape

import "fmt"

// Broadcast returns the numpy broadcast of shapes a and b.
func Broadcast(a, b []int) ([]int, error) {
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

// BroadcastIndex returns, for each element of out (row-major), the flat
// index of the element of an input of shape in that numpy broadcasting
// maps to it. It returns nil when in equals out (the identity map).
func BroadcastIndex(in, out []int) []int {
	if Equal(in, out) {
		return nil
	}
	r := len(out)
	st := make([]int, r) // stride of in along each out dim (0 when broadcast)
	ist := Strides(in)
	for i := 0; i < r; i++ {
		if j := len(in) - r + i; j >= 0 && in[j] != 1 {
			st[i] = ist[j]
		}
	}
	n := Numel(out)
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

// Equal reports whether shapes a and b are the same.
func Equal(a, b []int) bool {
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

// Bcast maps each element of a broadcast result to the element of one
// operand it reads, without an index per element where it can: an
// operand whose elements run along one contiguous block of the result's
// axes (a scalar; a bias over the last axis; a scale per channel, [C, 1,
// 1] of [N, C, H, W]; a gate per sample and channel) reads element
// (i / inner) mod mid. Other broadcasts keep BroadcastIndex's array
// (idx). nil is the identity (the operand has the result's shape).
type Bcast struct {
	Idx        []int
	Mid, Inner int
}

// NewBcast is BroadcastIndex as a Bcast.
func NewBcast(in, out []int) *Bcast {
	if Equal(in, out) {
		return nil
	}
	r := len(out)
	// in's axes aligned to out's (leading ones added); the axes where in
	// is not 1 must be one contiguous run equal to out's
	lo, hi := -1, -1
	for i := 0; i < r; i++ {
		d := 1
		if j := len(in) - r + i; j >= 0 {
			d = in[j]
		}
		if d == 1 {
			continue
		}
		if d != out[i] || (hi >= 0 && hi != i) {
			return &Bcast{Idx: BroadcastIndex(in, out)}
		}
		if lo < 0 {
			lo = i
		}
		hi = i + 1
	}
	if lo < 0 { // a scalar
		return &Bcast{Mid: 1, Inner: 1}
	}
	return &Bcast{Mid: Numel(out[lo:hi]), Inner: Numel(out[hi:])}
}

// at is the operand's element read by result element i (b not nil).
func (b *Bcast) At(i int) int {
	if b.Idx != nil {
		return b.Idx[i]
	}
	return (i / b.Inner) % b.Mid
}

// walk returns the operand element read by result element lo and lo's
// position within its run of inner elements, to step through [lo, hi)
// with next.
func (b *Bcast) Walk(lo int) (k, r int) { return (lo / b.Inner) % b.Mid, lo % b.Inner }

// next steps (k, r) by one result element.
func (b *Bcast) Next(k, r int) (int, int) {
	if r++; r == b.Inner {
		r = 0
		if k++; k == b.Mid {
			k = 0
		}
	}
	return k, r
}
