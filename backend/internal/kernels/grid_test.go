package kernels

import (
	"fmt"
	"testing"
)

// TestWorkSplitScales checks the plans the convolutions split their work
// by (not timings) on 2, 16 and 64 workers: a large product splits into
// about a block a worker, never more blocks than workers, and a tiny one
// runs whole; a batch that does not share out evenly among the workers
// splits its products; Winograd's 16 products split further only beyond
// 16 workers. Each would fail with a plan that assumes two workers.
func TestWorkSplitScales(t *testing.T) {
	grids := []struct {
		name    string
		a, b, k int
		want    func(w int) int // the fewest blocks
	}{
		// the full MTAN's 512-filter layers over a batch of 4 at 8×12
		{"forward 512x384x4608", 512, 384, 4608, func(w int) int { return min(w, (512/gridMinFirst)*(384/gridMinSecond)) }},
		{"input gradient 4608x384x512", 4608, 384, 512, func(w int) int { return w }},
		{"weight gradient 4608x512x384", 4608, 512, 384, func(w int) int { return w }},
		// a 4×6 plane: 96 columns, the rows alone
		{"forward 512x96x4608", 512, 96, 4608, func(w int) int { return min(w, 512/gridMinFirst) }},
		{"tiny 64x24x64", 64, 24, 64, func(int) int { return 1 }},
	}
	for _, w := range []int{1, 2, 16, 64} {
		for _, g := range grids {
			t.Run(fmt.Sprintf("w%d/%s", w, g.name), func(t *testing.T) {
				na, nb := productGrid(w, g.a, g.b, g.k)
				want := g.want(w)
				if w == 1 {
					want = 1
				}
				if na*nb < want || na*nb > max(w, 1) {
					t.Fatalf("%d×%d blocks on %d workers, want %d to %d", na, nb, w, want, max(w, 1))
				}
				if na*nb > 1 && (g.a/na < gridMinFirst || (nb > 1 && g.b/nb < gridMinSecond)) {
					t.Fatalf("%d×%d blocks of a %d×%d product: under the minimum block", na, nb, g.a, g.b)
				}
			})
		}
	}
	for _, c := range []struct {
		w, n int
		want bool
	}{
		{1, 4, false}, {2, 4, false}, {2, 3, true}, {2, 1, true}, {3, 4, true},
		{16, 4, true}, {16, 32, false}, {16, 40, true}, {64, 64, false}, {64, 8, true},
	} {
		if got := splitsProducts(c.w, c.n); got != c.want {
			t.Errorf("splitsProducts(%d workers, %d samples) = %v, want %v", c.w, c.n, got, c.want)
		}
	}
	for _, c := range []struct{ w, n, want int }{
		{2, 6144, 1}, {16, 6144, 1}, {32, 6144, 2}, {64, 6144, 4}, {64, 512, 4}, {64, 64, 2}, {64, 40, 1},
	} {
		if got := winoSplit(c.w, c.n); got != c.want {
			t.Errorf("winoSplit(%d workers, %d) = %d, want %d", c.w, c.n, got, c.want)
		}
	}
}
