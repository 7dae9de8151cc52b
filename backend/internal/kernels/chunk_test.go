package kernels

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// TestChunkCountMinimumWork checks parallelWork's plan on 1, 2, 16 and 64
// workers (not timings): a loop of less than two chunks' minimum work runs
// as one chunk whatever the worker count; a large loop splits into one
// chunk a worker; in between, every chunk holds at least minChunkWork.
// A plan keyed to the number of items alone, as parallelFor's is, fails
// the tiny rows; one keyed to two cores fails the 16 and 64 rows.
func TestChunkCountMinimumWork(t *testing.T) {
	cases := []struct {
		name   string
		n, per int
		want   func(w int) int
	}{
		// a depthwise 3×3 layer of convnext2: 4 samples × 32 channels of 4×4 planes
		{"depthwise 3x3 on 4x4 planes", 4 * 32, 16 * 9, func(int) int { return 1 }},
		{"one item", 1, 1 << 30, func(int) int { return 1 }},
		{"no work per item", 1000, 0, func(int) int { return 1 }},
		{"just under two chunks", 2, minChunkWork - 1, func(int) int { return 1 }},
		{"exactly two chunks", 2, minChunkWork, func(w int) int { return min(w, 2) }},
		// the full MTAN's depthwise-sized loop: 4 samples × 512 channels of 36×48 planes, 9 taps
		{"large 4x512 planes of 36x48", 4 * 512, 36 * 48 * 9, func(w int) int { return w }},
		// 1310 units an item: 26 items make a chunk, 1000 items 38 chunks
		{"38 chunks of work", 1000, 40 * minChunkWork / 1000, func(w int) int { return min(w, 38) }},
	}
	for _, w := range []int{1, 2, 16, 64} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("w%d/%s", w, c.name), func(t *testing.T) {
				got := chunkCount(w, c.n, c.per)
				want := c.want(w)
				if w == 1 {
					want = 1
				}
				if got != want {
					t.Fatalf("chunkCount(%d workers, %d items, %d each) = %d, want %d", w, c.n, c.per, got, want)
				}
				if got > 1 && c.n/got*c.per < minChunkWork { // the shortest of parallelWork's chunks
					t.Fatalf("%d chunks of %d items of %d: under minChunkWork", got, c.n, c.per)
				}
			})
		}
	}
}

// TestParallelWorkTinyRunsInline checks that a loop under the minimum runs
// as a single call covering every item, on worker 0, and that a large one
// still covers every item exactly once.
func TestParallelWorkTinyRunsInline(t *testing.T) {
	var calls atomic.Int32
	parallelWork(128, 144, func(wk, lo, hi int) {
		calls.Add(1)
		if wk != 0 || lo != 0 || hi != 128 {
			t.Errorf("tiny loop ran chunk %d [%d, %d), want the whole [0, 128) as chunk 0", wk, lo, hi)
		}
	})
	if c := calls.Load(); c != 1 {
		t.Fatalf("tiny loop ran %d chunks, want 1", c)
	}
	const n = 4096
	seen := make([]atomic.Int32, n)
	parallelWork(n, minChunkWork, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			seen[i].Add(1)
		}
	})
	for i := range seen {
		if s := seen[i].Load(); s != 1 {
			t.Fatalf("item %d ran %d times, want 1", i, s)
		}
	}
}
