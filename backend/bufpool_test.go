package backend

import (
	"testing"

	"gorgonia.org/tensor"
)

// TestBufPool checks the pool's choices: a free buffer of exactly the size
// asked for, else the smallest with at most 1/8 to spare, else a new one;
// among buffers of the chosen capacity, the one whose tensor has the shape
// asked for; over the limit, free buffers dropped largest first; drop
// empties it. Every case counts held and the free buffers left.
func TestBufPool(t *testing.T) {
	mk := func(n int) []float32 { return make([]float32, n) }
	same := func(a, b []float32) bool { return len(a) > 0 && len(b) > 0 && &a[:1][0] == &b[:1][0] }

	t.Run("exact before larger", func(t *testing.T) {
		b := &bufPool{}
		big, exact := mk(110), mk(100)
		b.put(big)
		b.put(exact)
		if got := b.get(100); !same(got, exact) || len(got) != 100 {
			t.Errorf("get(100) did not return the free buffer of 100")
		}
		if got := b.get(100); !same(got, big) || len(got) != 100 || cap(got) != 110 {
			t.Errorf("get(100) did not return the free buffer of 110 (within 1/8)")
		}
		if b.nfree != 0 {
			t.Errorf("%d free buffers left, expected 0", b.nfree)
		}
	})
	t.Run("smallest within an eighth", func(t *testing.T) {
		b := &bufPool{}
		b.put(mk(112))
		b.put(mk(105))
		b.put(mk(113)) // more than 1/8 above 100
		if got := b.get(100); cap(got) != 105 {
			t.Errorf("get(100) took a buffer of %d, expected 105", cap(got))
		}
		if got := b.get(100); cap(got) != 112 {
			t.Errorf("get(100) took a buffer of %d, expected 112", cap(got))
		}
		got := b.get(100)
		if cap(got) != 100 || b.held != 100 || b.nfree != 1 {
			t.Errorf("get(100) with only 113 free: cap %d, held %d, %d free; expected a new 100, held 100, 1 free", cap(got), b.held, b.nfree)
		}
	})
	t.Run("tensor of the shape preferred", func(t *testing.T) {
		b := &bufPool{}
		f1, f2, f3 := mk(12), mk(12), mk(12)
		d2 := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking(f2))
		d3 := tensor.New(tensor.WithShape(4, 3), tensor.WithBacking(f3))
		b.putDense(f2, d2)
		b.putDense(f1, nil)
		b.putDense(f3, d3)
		f, d := b.getDense(12, []int{3, 4})
		if !same(f, f2) || d != d2 {
			t.Errorf("getDense(12, [3 4]) did not return the buffer its [3 4] tensor wrapped")
		}
		f, d = b.getDense(12, []int{2, 6})
		if d != nil && !d.Shape().Eq(tensor.Shape{2, 6}) {
			t.Errorf("getDense(12, [2 6]) returned a tensor of shape %v", d.Shape())
		}
		if same(f, f2) {
			t.Errorf("getDense returned a buffer taken before")
		}
	})
	t.Run("limit drops largest first", func(t *testing.T) {
		b := &bufPool{limit: 300}
		for _, n := range []int{50, 200, 40} {
			b.held += int64(n) // handed out, then returned
			b.put(mk(n))
		}
		got := b.get(70) // nothing fits: 290 + 70 > 300 drops the 200
		if cap(got) != 70 || b.held != 160 || b.nfree != 2 || len(b.free[200]) != 0 {
			t.Errorf("get(70): cap %d, held %d, %d free, %d of 200 free; expected 70, 160, 2, 0", cap(got), b.held, b.nfree, len(b.free[200]))
		}
		b.drop()
		if b.held != 70 || b.nfree != 0 {
			t.Errorf("after drop: held %d, %d free; expected 70 (the buffer out), 0", b.held, b.nfree)
		}
	})
}
