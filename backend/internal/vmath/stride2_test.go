package vmath

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// stride2Values is n float32 values of random bits (NaNs with payloads,
// −0, infinities and subnormals among them: the moves must keep them all).
func stride2Values(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(r.Uint32())
	}
	return v
}

const sentinel = 0x7fc0dead // a NaN no move writes

// sentinels is n values no move writes: a value left as it was shows.
func sentinels(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(sentinel)
	}
	return v
}

// withKernel runs f with k as the active kernel.
func withKernel(k kernel, f func()) {
	old := active
	active = k
	defer func() { active = old }()
	f()
}

// TestStride2Rows checks Deinterleave32Rows and Interleave32Rows against
// their definitions, bit for bit, with every kernel this CPU runs: 0 to 3
// rows, odd lengths 0 to 40 (vector blocks of 8 pairs and tails), an even
// column more or not, and strides with gaps between the rows that must
// keep the values they had.
func TestStride2Rows(t *testing.T) {
	r := rand.New(rand.NewSource(13))
	for _, k := range kernels() {
		t.Run(k.String(), func(t *testing.T) {
			for rows := 0; rows <= 3; rows++ {
				for no := 0; no <= 40; no++ {
					for extra := 0; extra <= 1; extra++ {
						ne := no + extra
						es, os, ss, ds := ne+2, no+3, ne+no+5, ne+no+1
						name := fmt.Sprintf("rows %d odd %d extra %d", rows, no, extra)
						src := stride2Values(r, rows*ss+1)
						even, odd := sentinels(rows*es+1), sentinels(rows*os+1)
						withKernel(k, func() { Deinterleave32Rows(even, odd, src, rows, ne, no, es, os, ss) })
						for i := range even {
							want := uint32(sentinel)
							if row, c := i/es, i%es; row < rows && c < ne {
								want = math.Float32bits(src[row*ss+2*c])
							}
							if got := math.Float32bits(even[i]); got != want {
								t.Fatalf("deinterleave %s: even[%d] = %#x, want %#x", name, i, got, want)
							}
						}
						for i := range odd {
							want := uint32(sentinel)
							if row, c := i/os, i%os; row < rows && c < no {
								want = math.Float32bits(src[row*ss+2*c+1])
							}
							if got := math.Float32bits(odd[i]); got != want {
								t.Fatalf("deinterleave %s: odd[%d] = %#x, want %#x", name, i, got, want)
							}
						}
						dst := sentinels(rows*ds + 1)
						withKernel(k, func() { Interleave32Rows(dst, even, odd, rows, ne, no, ds, es, os) })
						for i := range dst {
							want := uint32(sentinel)
							if row, c := i/ds, i%ds; row < rows && c < ne+no {
								want = math.Float32bits(even[row*es+c/2])
								if c%2 == 1 {
									want = math.Float32bits(odd[row*os+c/2])
								}
							}
							if got := math.Float32bits(dst[i]); got != want {
								t.Fatalf("interleave %s: dst[%d] = %#x, want %#x", name, i, got, want)
							}
						}
					}
				}
			}
		})
	}
}

// TestStride2Lengths checks that counts that cannot be a row's columns
// (fewer even than odd, or two more) panic rather than write part of a
// row.
func TestStride2Lengths(t *testing.T) {
	for _, c := range []struct{ ne, no int }{{2, 3}, {5, 3}} {
		for name, f := range map[string]func(){
			"Deinterleave32Rows": func() {
				Deinterleave32Rows(make([]float32, 16), make([]float32, 16), make([]float32, 16), 1, c.ne, c.no, 8, 8, 16)
			},
			"Interleave32Rows": func() {
				Interleave32Rows(make([]float32, 16), make([]float32, 16), make([]float32, 16), 1, c.ne, c.no, 16, 8, 8)
			},
		} {
			t.Run(fmt.Sprintf("%s/%d,%d", name, c.ne, c.no), func(t *testing.T) {
				defer func() {
					if recover() == nil {
						t.Fatalf("%s with %d even and %d odd values did not panic", name, c.ne, c.no)
					}
				}()
				f()
			})
		}
	}
}

// BenchmarkDeinterleave32Rows times each kernel on a plane's rows: 16
// rows of 16 values (ShuffleNet's 16×16 stride-2 layer) and 32 of 32.
func BenchmarkDeinterleave32Rows(b *testing.B) {
	for _, n := range []int{16, 32} {
		src := stride2Values(rand.New(rand.NewSource(1)), n*n)
		even, odd := make([]float32, n*n/2), make([]float32, n*n/2)
		for _, k := range kernels() {
			b.Run(fmt.Sprintf("%dx%d/%v", n, n, k), func(b *testing.B) {
				withKernel(k, func() {
					for b.Loop() {
						Deinterleave32Rows(even, odd, src, n, n/2, n/2, n/2, n/2, n)
					}
				})
			})
		}
	}
}
