package gemm

import (
	"fmt"
	"testing"
)

// TestSplitScalesWithWorkers checks splitOf's plan (what SgemmParallel and
// SgemmPackedParallel run), not timings: a large product gives every
// worker a block on 2, 16 and 64 workers, a product of few columns splits
// its rows so that many workers still get blocks, a tiny product runs
// whole, and the blocks tile the product exactly, each within the
// minimum sizes (rows start on whole panels).
func TestSplitScalesWithWorkers(t *testing.T) {
	if !Accelerated() {
		t.Skip("no micro-kernel: products go to gonum whole")
	}
	cases := []struct {
		m, n, k   int
		minBlocks func(w int) int
	}{
		{4096, 4096, 1024, func(w int) int { return w }},                               // large: a block a worker
		{512, 6144, 576, func(w int) int { return w }},                                 // a 3×3 convolution's band: columns alone
		{8192, 96, 1024, func(w int) int { return min(w, 8192/minRows) * 9 / 10 }},     // few columns: rows too (in whole panels: a few blocks fewer)
		{4608, 384, 512, func(w int) int { return min(w, 6*(4608/minRows)) * 9 / 10 }}, // an input gradient over a batch of 8×12 planes
		{32, 32, 32, func(int) int { return 1 }},                                       // tiny: whole
		{100, 100, 100, func(int) int { return 1 }},
	}
	for _, w := range []int{1, 2, 16, 64} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("w%d/%dx%dx%d", w, c.m, c.n, c.k), func(t *testing.T) {
				s := splitOf(w, c.m, c.n, c.k)
				want := c.minBlocks(w)
				if w == 1 {
					want = 1
				}
				tiny := int64(c.m)*int64(c.n)*int64(c.k) < parallelMin
				switch {
				case (tiny || w == 1) && s.blocks() != 1:
					t.Fatalf("%d blocks, want the product whole", s.blocks())
				case s.blocks() < want:
					t.Fatalf("%d blocks (%d×%d of %d×%d) for %d workers, want at least %d", s.blocks(), s.rb, s.cb, s.rc, s.cc, w, want)
				case s.blocks() > max(w, 1):
					t.Fatalf("%d blocks for %d workers", s.blocks(), w)
				}
				covered := 0
				for b := range s.blocks() {
					i0, i1, j0, j1 := s.block(b, c.m, c.n)
					if i0 >= i1 || j0 >= j1 {
						t.Fatalf("block %d empty: rows [%d, %d) columns [%d, %d)", b, i0, i1, j0, j1)
					}
					if s.blocks() > 1 && (i0%rowAlign != 0 || j0%colAlign != 0 || (s.cb > 1 && j1-j0 < minCols && j1 != c.n) || (s.rb > 1 && i1-i0 < minRows && i1 != c.m)) {
						t.Fatalf("block %d: rows [%d, %d) columns [%d, %d) off the panels or under the minimum", b, i0, i1, j0, j1)
					}
					covered += (i1 - i0) * (j1 - j0)
				}
				if covered != c.m*c.n {
					t.Fatalf("blocks cover %d of %d elements", covered, c.m*c.n)
				}
			})
		}
	}
}
