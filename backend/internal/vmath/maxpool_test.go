package vmath

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestMaxPool2x2Idx32 checks the kernel against the definition: the
// first maximum of each window (ties among equal values and ±0 keep the
// earlier), full blocks of 16 windows and tails of 1–15, an odd column
// left out of every window; NaNs beyond a row's 2·ow values (never read:
// every row done) and inside a window (the rows before it done, the count
// returned); indices past oh·ow untouched.
func TestMaxPool2x2Idx32(t *testing.T) {
	if !active.hasMaxPool() {
		if n := MaxPool2x2Idx32(make([]float32, 4), 2, make([]int64, 1), 1, 1, 0); n != 0 {
			t.Fatalf("without a kernel: %d rows, want 0", n)
		}
		t.Skipf("no MaxPool2x2Idx32 kernel on %v: the caller's loop does the pooling", active)
	}
	r := rand.New(rand.NewSource(5))
	for _, c := range []struct {
		oh, ow, w int
		nanRow    int // a NaN in this row's windows (−1: none)
		zeros     bool
	}{
		{1, 1, 2, -1, false},
		{3, 16, 32, -1, false},
		{4, 17, 35, -1, false},
		{5, 33, 66, -1, true},
		{14, 14, 28, -1, false},
		{5, 5, 10, -1, false},
		{6, 40, 81, 3, false},
		{6, 40, 80, 0, false},
		{2, 7, 15, 1, false},
	} {
		t.Run(fmt.Sprintf("%dx%d w=%d nan=%d", c.oh, c.ow, c.w, c.nanRow), func(t *testing.T) {
			h := 2*c.oh + 1
			x := make([]float32, h*c.w)
			for i := range x {
				if c.zeros {
					x[i] = float32(math.Copysign(0, r.Float64()-0.5))
				} else {
					x[i] = float32(r.Intn(5) - 2) // ties
				}
			}
			// Values no window holds: columns past 2·ow, the row past 2·oh.
			for i := 0; i < h; i++ {
				for j := 2 * c.ow; j < c.w; j++ {
					x[i*c.w+j] = float32(math.NaN())
				}
			}
			for j := 0; j < c.w; j++ {
				x[2*c.oh*c.w+j] = float32(math.NaN())
			}
			wantRows := c.oh
			if c.nanRow >= 0 {
				x[(2*c.nanRow+1)*c.w+2*(c.ow-1)+1] = float32(math.NaN()) // the row's last value
				wantRows = c.nanRow
			}
			const base, sentinel = 1000, -7
			idx := make([]int64, c.oh*c.ow+3)
			for i := range idx {
				idx[i] = sentinel
			}
			rows := MaxPool2x2Idx32(x, c.w, idx[:c.oh*c.ow], c.oh, c.ow, base)
			if rows != wantRows {
				t.Fatalf("%d rows done, want %d", rows, wantRows)
			}
			for oi := 0; oi < rows; oi++ {
				for j := 0; j < c.ow; j++ {
					p := 2*oi*c.w + 2*j
					best, arg := x[p], p
					for _, q := range []int{p + 1, p + c.w, p + c.w + 1} {
						if x[q] > best {
							best, arg = x[q], q
						}
					}
					if got := idx[oi*c.ow+j]; got != int64(base+arg) {
						t.Fatalf("window (%d, %d): index %d, want %d", oi, j, got, base+arg)
					}
				}
			}
			for i := c.oh * c.ow; i < len(idx); i++ {
				if idx[i] != sentinel {
					t.Fatalf("index %d past the output written: %d", i, idx[i])
				}
			}
		})
	}
}

// BenchmarkMaxPool2x2Idx32 times the kernel on LeNet's first pooled
// planes (28×28 → 14×14) and a 64×96 plane, in ns per input value.
func BenchmarkMaxPool2x2Idx32(b *testing.B) {
	for _, s := range []struct{ h, w int }{{28, 28}, {64, 96}} {
		b.Run(fmt.Sprintf("%dx%d", s.h, s.w), func(b *testing.B) {
			r := rand.New(rand.NewSource(1))
			x := make([]float32, s.h*s.w)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			idx := make([]int64, s.h*s.w/4)
			for b.Loop() {
				MaxPool2x2Idx32(x, s.w, idx, s.h/2, s.w/2, 0)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/value")
		})
	}
}
