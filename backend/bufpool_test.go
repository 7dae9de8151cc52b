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

// TestBufPoolSlabs checks the lent buffers' lifetimes (bufPool.lend,
// giveBack, carve): a given-back slab serves gets with pieces that overlap
// neither each other nor anything still out, and that no free buffer
// fits; a loan reclaims a slab whole only with every piece back, taking
// its pieces out of the free lists, and nothing is carved from a slab
// while it is lent; a slab with a piece still out at a loan is orphaned
// (that piece comes back as an ordinary buffer) and a new slab lent;
// held counts a slab once and every buffer besides; dropping frees slab
// pieces neither above the limit nor at drop but with their slab.
func TestBufPoolSlabs(t *testing.T) {
	// in reports whether f, to its capacity, lies within s.
	in := func(f, s []float32) bool {
		for i := range s {
			if len(f) > 0 && &s[i] == &f[0] {
				return i+cap(f) <= len(s)
			}
		}
		return false
	}
	overlap := func(a, b []float32) bool {
		a, b = a[:cap(a)], b[:cap(b)]
		for i := range a {
			if &a[i] == &b[0] || &a[i] == &b[len(b)-1] {
				return true
			}
		}
		for i := range b {
			if &b[i] == &a[0] {
				return true
			}
		}
		return false
	}

	t.Run("pieces of a given-back slab", func(t *testing.T) {
		b := &bufPool{}
		s := b.lend(100)
		if len(s) != 100 || cap(s) != 100 || b.held != 100 {
			t.Fatalf("lend(100): len %d cap %d held %d; expected 100 100 100", len(s), cap(s), b.held)
		}
		if got := b.get(10); in(got, s) {
			t.Errorf("get(10) while the slab is lent returned a piece of it")
		}
		b.held = 100 // forget the ordinary buffer of 10 (never returned)
		b.giveBack(s)
		p1, p2, p3 := b.get(30), b.get(50), b.get(20)
		ps := [][]float32{p1, p2, p3}
		for i, p := range ps {
			if !in(p, s) || cap(p) != len(p) {
				t.Errorf("piece %d (len %d, cap %d) is not a piece of the slab of its own length", i, len(p), cap(p))
			}
			for j := range i {
				if overlap(p, ps[j]) {
					t.Errorf("pieces %d and %d overlap", j, i)
				}
			}
		}
		if b.held != 100 {
			t.Errorf("held %d after carving, expected 100 (the slab)", b.held)
		}
		if got := b.get(1); in(got, s) {
			t.Errorf("get(1) with the slab carved whole returned a piece of it")
		} else {
			b.put(got)
		}
		b.put(p2)
		if got := b.get(50); &got[0] != &p2[0] {
			t.Errorf("get(50) did not return the free piece of 50")
		} else {
			p2 = got
		}
		// A loan while pieces are out orphans the slab: a new one is lent,
		// and a piece coming back is an ordinary buffer.
		b.put(p1)
		s2 := b.lend(100)
		if in(s2, s) || overlap(s2, s) {
			t.Fatalf("lend(100) with pieces out returned the slab they are carved from")
		}
		if len(b.slabs) != 1 || b.held != 1+50+20+100 {
			t.Errorf("after the orphaning loan: %d slabs, held %d; expected 1, 171 (the free buffer of 1, the pieces of 50 and 20 still out, the new slab)", len(b.slabs), b.held)
		}
		b.put(p2)
		b.put(p3)
		if b.held != 171 || len(b.pieces) != 0 {
			t.Errorf("pieces of the orphaned slab back: held %d, %d pieces known; expected 171, 0", b.held, len(b.pieces))
		}
		b.giveBack(s2)
		if got := b.get(50); &got[0] != &p2[0] {
			t.Errorf("get(50) did not return the orphaned piece of 50, now an ordinary free buffer")
		}
	})
	t.Run("loan reclaims the slab whole", func(t *testing.T) {
		b := &bufPool{}
		s := b.lend(100)
		b.giveBack(s)
		p1, p2 := b.get(40), b.get(60)
		b.put(p2)
		b.put(p1)
		if b.nfree != 2 {
			t.Fatalf("%d free buffers, expected the 2 pieces", b.nfree)
		}
		s2 := b.lend(100)
		if &s2[0] != &s[0] || b.nfree != 0 || len(b.pieces) != 0 || b.held != 100 {
			t.Errorf("lend(100) with every piece back: same slab %v, %d free, %d pieces known, held %d; expected true, 0, 0, 100", &s2[0] == &s[0], b.nfree, len(b.pieces), b.held)
		}
		if got := b.get(40); in(got, s2) {
			t.Errorf("get(40) while the slab is lent again returned a piece of it")
		}
	})
	t.Run("carving reclaims a slab whose pieces are all free", func(t *testing.T) {
		b := &bufPool{}
		b.giveBack(b.lend(100))
		p1, p2 := b.get(50), b.get(50)
		b.put(p1)
		b.put(p2)
		got := b.get(80) // no piece fits, and the slab is full: reclaimed
		if &got[0] != &p1[0] || b.nfree != 0 || b.held != 100 {
			t.Errorf("get(80): from the slab's start %v, %d free, held %d; expected true, 0, 100", &got[0] == &p1[0], b.nfree, b.held)
		}
	})
	t.Run("limit and drop", func(t *testing.T) {
		b := &bufPool{limit: 130}
		b.giveBack(b.lend(100))
		p := b.get(60) // out
		q := b.get(30)
		b.put(q)
		o := b.get(50) // no room in the slab, none reclaimed: a new buffer, the free piece kept
		if in(o, b.slabs[0].buf) || b.held != 150 || b.nfree != 1 {
			t.Errorf("get(50): held %d, %d free; expected 150 (slab and new buffer), 1 (the piece)", b.held, b.nfree)
		}
		b.put(p)
		b.put(o)
		b.drop()
		if b.held != 0 || b.nfree != 0 || len(b.slabs) != 0 || len(b.pieces) != 0 {
			t.Errorf("after drop: held %d, %d free, %d slabs, %d pieces; expected 0", b.held, b.nfree, len(b.slabs), len(b.pieces))
		}
	})
	t.Run("off", func(t *testing.T) {
		b := &bufPool{noCarve: true}
		s := b.lend(100)
		b.giveBack(s)
		if got := b.get(10); in(got, s) || len(b.slabs) != 0 {
			t.Errorf("with carving off, get(10) returned a piece of a given-back buffer (%d slabs)", len(b.slabs))
		}
	})
}
