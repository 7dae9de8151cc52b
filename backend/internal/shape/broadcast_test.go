package shape

import (
	"testing"
)

// TestBcastMatchesBroadcastIndex checks Bcast (an operand's element per
// result element, without an index array for runs) against
// BroadcastIndex, element by element, and its Walk against At from
// every starting point.
func TestBcastMatchesBroadcastIndex(t *testing.T) {
	cases := [][2][]int{
		{{}, {3, 4}}, {{1}, {2, 3, 4}}, {{4}, {2, 3, 4}}, {{3, 1}, {2, 3, 4}}, {{2, 3, 1}, {2, 3, 4}},
		{{3, 4}, {2, 3, 4}}, {{2, 1, 4}, {2, 3, 4}}, {{1, 3, 1}, {2, 3, 4}}, {{2, 1, 1}, {2, 3, 4}},
		{{96, 1, 1}, {4, 96, 8, 8}}, {{1, 1, 1, 1}, {2, 2, 2, 2}}, {{2, 3, 4}, {2, 3, 4}},
	}
	for _, c := range cases {
		want := BroadcastIndex(c[0], c[1])
		b := NewBcast(c[0], c[1])
		if want == nil {
			if b != nil {
				t.Fatalf("%v → %v: identity, bcast %+v", c[0], c[1], b)
			}
			continue
		}
		for i, w := range want {
			if got := b.At(i); got != w {
				t.Fatalf("%v → %v: element %d reads %d, broadcastIndex %d", c[0], c[1], i, got, w)
			}
		}
		if b.Idx != nil {
			continue
		}
		for lo := range want {
			k, r := b.Walk(lo)
			for i := lo; i < len(want); i++ {
				if k != want[i] {
					t.Fatalf("%v → %v: walk from %d reads %d at %d, broadcastIndex %d", c[0], c[1], lo, k, i, want[i])
				}
				k, r = b.Next(k, r)
			}
		}
	}
}
