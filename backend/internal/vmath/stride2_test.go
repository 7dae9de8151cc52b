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

// withKernel runs f with k as the active kernel.
func withKernel(k kernel, f func()) {
	old := active
	active = k
	defer func() { active = old }()
	f()
}

// TestDeinterleave32 checks Deinterleave32 against its definition, bit
// for bit, with every kernel this CPU runs: odd lengths 0 to 40 (vector
// blocks of 8 pairs and tails), an even column more or not, unaligned
// offsets, and nothing written past either destination.
func TestDeinterleave32(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for _, k := range kernels() {
		t.Run(k.String(), func(t *testing.T) {
			for no := 0; no <= 40; no++ {
				for extra := 0; extra <= 1; extra++ {
					for _, off := range []int{0, 1, 3} {
						ne := no + extra
						src := stride2Values(r, off+ne+no)
						even, odd := make([]float32, off+ne+1), make([]float32, off+no+1)
						for i := range even {
							even[i] = math.Float32frombits(sentinel)
						}
						for i := range odd {
							odd[i] = math.Float32frombits(sentinel)
						}
						withKernel(k, func() { Deinterleave32(even[off:off+ne], odd[off:off+no], src[off:]) })
						for i := 0; i < ne; i++ {
							if g, w := math.Float32bits(even[off+i]), math.Float32bits(src[off+2*i]); g != w {
								t.Fatalf("odd %d extra %d off %d: even[%d] = %#x, want %#x", no, extra, off, i, g, w)
							}
						}
						for i := 0; i < no; i++ {
							if g, w := math.Float32bits(odd[off+i]), math.Float32bits(src[off+2*i+1]); g != w {
								t.Fatalf("odd %d extra %d off %d: odd[%d] = %#x, want %#x", no, extra, off, i, g, w)
							}
						}
						if math.Float32bits(even[off+ne]) != sentinel || math.Float32bits(odd[off+no]) != sentinel {
							t.Fatalf("odd %d extra %d off %d: wrote past a destination", no, extra, off)
						}
					}
				}
			}
		})
	}
}

// TestInterleave32 checks Interleave32 the same way: dst[2i] = even[i],
// dst[2i+1] = odd[i], bit for bit, nothing written past len(even)+len(odd).
func TestInterleave32(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	for _, k := range kernels() {
		t.Run(k.String(), func(t *testing.T) {
			for no := 0; no <= 40; no++ {
				for extra := 0; extra <= 1; extra++ {
					for _, off := range []int{0, 1, 3} {
						ne := no + extra
						even, odd := stride2Values(r, off+ne), stride2Values(r, off+no)
						dst := make([]float32, off+ne+no+1)
						for i := range dst {
							dst[i] = math.Float32frombits(sentinel)
						}
						withKernel(k, func() { Interleave32(dst[off:], even[off:], odd[off:]) })
						for i := 0; i < ne+no; i++ {
							w := math.Float32bits(even[off+i/2])
							if i%2 == 1 {
								w = math.Float32bits(odd[off+i/2])
							}
							if g := math.Float32bits(dst[off+i]); g != w {
								t.Fatalf("odd %d extra %d off %d: dst[%d] = %#x, want %#x", no, extra, off, i, g, w)
							}
						}
						if math.Float32bits(dst[off+ne+no]) != sentinel {
							t.Fatalf("odd %d extra %d off %d: wrote past len(even)+len(odd)", no, extra, off)
						}
					}
				}
			}
		})
	}
}

// TestStride2Lengths checks that lengths that cannot be a row's columns
// (even shorter than odd, or longer by two) panic rather than write a
// partial row.
func TestStride2Lengths(t *testing.T) {
	for _, c := range []struct{ ne, no int }{{2, 3}, {5, 3}, {0, 1}} {
		for name, f := range map[string]func(){
			"Deinterleave32": func() { Deinterleave32(make([]float32, c.ne), make([]float32, c.no), make([]float32, 16)) },
			"Interleave32":   func() { Interleave32(make([]float32, 16), make([]float32, c.ne), make([]float32, c.no)) },
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

// BenchmarkDeinterleave32 times each kernel on a 32-value row (the
// phase split of a 32×32 plane) and a 1024-value one.
func BenchmarkDeinterleave32(b *testing.B) {
	for _, n := range []int{32, 1024} {
		src := stride2Values(rand.New(rand.NewSource(1)), n)
		even, odd := make([]float32, n/2), make([]float32, n/2)
		for _, k := range kernels() {
			b.Run(fmt.Sprintf("%d/%v", n, k), func(b *testing.B) {
				withKernel(k, func() {
					for b.Loop() {
						Deinterleave32(even, odd, src)
					}
				})
			})
		}
	}
}

// TestStride2Rows checks Deinterleave32Rows and Interleave32Rows against
// Deinterleave32 and Interleave32 row by row, bit for bit, with every
// kernel this CPU runs: 0 to 4 rows, odd lengths 0 to 20, an even column
// more or not, and strides with gaps between the rows that must stay as
// they were.
func TestStride2Rows(t *testing.T) {
	r := rand.New(rand.NewSource(13))
	for _, k := range kernels() {
		t.Run(k.String(), func(t *testing.T) {
			for rows := 0; rows <= 4; rows++ {
				for no := 0; no <= 20; no++ {
					for extra := 0; extra <= 1; extra++ {
						ne := no + extra
						es, os, ss := ne+2, no+3, ne+no+5
						src := stride2Values(r, max(rows*ss, 1))
						even, odd := make([]float32, max(rows*es, 1)), make([]float32, max(rows*os, 1))
						wantE, wantO := make([]float32, len(even)), make([]float32, len(odd))
						for i := range even {
							even[i], wantE[i] = math.Float32frombits(sentinel), math.Float32frombits(sentinel)
						}
						for i := range odd {
							odd[i], wantO[i] = math.Float32frombits(sentinel), math.Float32frombits(sentinel)
						}
						withKernel(k, func() {
							Deinterleave32Rows(even, odd, src, rows, ne, no, es, os, ss)
							for i := 0; i < rows; i++ {
								Deinterleave32(wantE[i*es:][:ne], wantO[i*os:][:no], src[i*ss:])
							}
						})
						for i := range even {
							if math.Float32bits(even[i]) != math.Float32bits(wantE[i]) {
								t.Fatalf("deinterleave rows %d odd %d extra %d: even[%d] = %#x, want %#x", rows, no, extra, i,
									math.Float32bits(even[i]), math.Float32bits(wantE[i]))
							}
						}
						for i := range odd {
							if math.Float32bits(odd[i]) != math.Float32bits(wantO[i]) {
								t.Fatalf("deinterleave rows %d odd %d extra %d: odd[%d] = %#x, want %#x", rows, no, extra, i,
									math.Float32bits(odd[i]), math.Float32bits(wantO[i]))
							}
						}
						ds := ne + no + 3
						dst, want := make([]float32, max(rows*ds, 1)), make([]float32, max(rows*ds, 1))
						for i := range dst {
							dst[i], want[i] = math.Float32frombits(sentinel), math.Float32frombits(sentinel)
						}
						withKernel(k, func() {
							Interleave32Rows(dst, even, odd, rows, ne, no, ds, es, os)
							for i := 0; i < rows; i++ {
								Interleave32(want[i*ds:], even[i*es:][:ne], odd[i*os:][:no])
							}
						})
						for i := range dst {
							if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
								t.Fatalf("interleave rows %d odd %d extra %d: dst[%d] = %#x, want %#x", rows, no, extra, i,
									math.Float32bits(dst[i]), math.Float32bits(want[i]))
							}
						}
					}
				}
			}
		})
	}
}
