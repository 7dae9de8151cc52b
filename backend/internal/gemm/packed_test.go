package gemm

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestSgemmPackedMatchesSgemm checks that products with a packed once
// (PackA, SgemmPacked, SgemmPackedParallel) give Sgemm's bits on every
// path: packed b, b in place (m ≤ directMaxM), a in place (few columns:
// SgemmPacked then calls Sgemm), Cᵀ (n ≤ nr/2), k and m across several
// blocks with partial ones, more than blockN columns, transposed a and b,
// c written over (beta 0, with NaN in c) and added to; and with each
// kernel this CPU has.
func TestSgemmPackedMatchesSgemm(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	shapes := []struct {
		tA, tB  bool
		m, n, k int
		beta    float32
	}{
		{false, false, 64, 384, 576, 0},    // a 64-filter convolution's band: b in place
		{false, false, 128, 6200, 1152, 0}, // b in place, two column blocks
		{true, false, 2304, 384, 256, 0},   // an input gradient (Wᵀ·dY), packed b
		{true, false, 576, 700, 64, 1},     // transposed a, beta 1
		{false, true, 101, 95, 513, 0},     // edges everywhere
		{false, false, 300, 40, 70, 1},     // few columns: a in place
		{false, false, 302, 40, 70, 0},     // few columns, a partial panel: a in place but its last rows
		{false, false, 200, 9, 300, 0},     // Cᵀ
		{true, true, 30, 200, 29, 1},       // both transposed
		{false, false, 7, 1, 3, 0},         // tiny
		{false, false, 1000, 96, 40, 0},    // few columns, many rows: rows split too
		{true, false, 1030, 150, 64, 1},    // rows split, transposed a, partial panels
		{false, true, 512, 96, 4608, 0},    // a 512-filter convolution over a 4×6 plane, batch 4
	}
	for _, kr := range append([]*kernel{nil}, kernels()...) {
		name := "default"
		if kr != nil {
			name = kr.name
		}
		t.Run(name, func(t *testing.T) {
			if kr != nil {
				defer func(k *kernel) { active = k }(active)
				active = kr
			}
			for _, s := range shapes {
				t.Run(fmt.Sprint(s), func(t *testing.T) {
					fill := func(n int) []float32 {
						v := make([]float32, n)
						for i := range v {
							v[i] = float32(rng.NormFloat64())
						}
						return v
					}
					lda, ldb := s.k+1, s.n+2
					if s.tA {
						lda = s.m + 1
					}
					if s.tB {
						ldb = s.k + 2
					}
					a, b, c0 := fill(max(s.m, s.k)*lda), fill(max(s.k, s.n)*ldb), fill(s.m*s.n)
					if s.beta == 0 {
						for i := range c0 {
							if i%3 == 0 {
								c0[i] = float32(math.NaN())
							}
						}
					}
					want := append([]float32{}, c0...)
					Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, b, ldb, s.beta, want, s.n)
					p := PackA(s.tA, s.m, s.k, a, lda, make([]float32, PackedALen(s.m, s.k)))
					for _, w := range []int{0, 1, 2, 3, 8, 64} {
						got := append([]float32{}, c0...)
						if w == 0 {
							SgemmPacked(&p, s.tB, s.n, b, ldb, s.beta, got, s.n)
						} else {
							SgemmPackedParallel(w, &p, s.tB, s.n, b, ldb, s.beta, got, s.n)
						}
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("workers %d: c[%d] = %v with a packed once, %v from Sgemm", w, i, got[i], want[i])
							}
						}
					}
				})
			}
		})
	}
}

// TestPackAPanics checks PackA's argument checks: a short buffer and a
// too short.
func TestPackAPanics(t *testing.T) {
	if !Accelerated() {
		t.Skip("no micro-kernel: PackA keeps a unpacked")
	}
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"short buffer", func() { PackA(false, 12, 10, make([]float32, 120), 10, make([]float32, 100)) }},
		{"short a", func() { PackA(false, 12, 10, make([]float32, 100), 10, make([]float32, 120)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatalf("%s: no panic", c.name)
				}
			}()
			c.f()
		})
	}
}
