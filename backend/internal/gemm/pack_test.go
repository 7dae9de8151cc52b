package gemm

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// refPackA is packA's documented layout, computed naively: panel p, step l,
// row i holds alpha·op(a)[ic+p·mr+i, pc+l], zero past row mc.
func refPackA(trans bool, a []float32, lda, ic, pc, mc, kc, mr int, alpha float32) []float32 {
	panels := (mc + mr - 1) / mr
	d := make([]float32, panels*mr*kc)
	for p := 0; p < panels; p++ {
		for l := 0; l < kc; l++ {
			for i := 0; i < mr; i++ {
				r := p*mr + i
				if r >= mc {
					continue
				}
				o := (ic+r)*lda + pc + l
				if trans {
					o = (pc+l)*lda + ic + r
				}
				v := a[o]
				d[p*mr*kc+l*mr+i] = alpha * v
			}
		}
	}
	return d
}

// refPackB is packB's documented layout, computed naively: panel q, step l,
// column j holds op(b)[pc+l, jc+q·nr+j], zero past column nc.
func refPackB(trans bool, b []float32, ldb, pc, jc, kc, nc, nr int) []float32 {
	panels := (nc + nr - 1) / nr
	d := make([]float32, panels*nr*kc)
	for q := 0; q < panels; q++ {
		for l := 0; l < kc; l++ {
			for j := 0; j < nr; j++ {
				c := q*nr + j
				if c >= nc {
					continue
				}
				o := (pc+l)*ldb + jc + c
				if trans {
					o = (jc+c)*ldb + pc + l
				}
				d[q*nr*kc+l*nr+j] = b[o]
			}
		}
	}
	return d
}

// checkPacked compares got[:len(want)] with want bit for bit and checks
// that got past want (a sentinel) is untouched.
func checkPacked(t *testing.T, got, want []float32) {
	t.Helper()
	for i, w := range want {
		if math.Float32bits(got[i]) != math.Float32bits(w) {
			t.Fatalf("dst[%d] = %v, want %v", i, got[i], w)
		}
	}
	for i := len(want); i < len(got); i++ {
		if !math.IsNaN(float64(got[i])) {
			t.Fatalf("dst[%d] = %v past the packed panels, want the NaN sentinel", i, got[i])
		}
	}
}

// TestPackLayout checks packA and packB, with the assembly packing kernels
// (where the CPU has them) and with the pure-Go loops, against refPackA
// and refPackB for both transposes, alpha 1 and 0.5, every kernel's MR and
// NR (and odd ones), full and partial panels, odd kc (and 0) and offsets into the
// matrix, on a destination prefilled with NaN (stale data the packers must
// overwrite).
func TestPackLayout(t *testing.T) {
	asm := []bool{false}
	if packAsm {
		asm = append(asm, true)
	}
	for _, useAsm := range asm {
		t.Run(fmt.Sprintf("asm=%v", useAsm), func(t *testing.T) {
			saved := packAsm
			packAsm = useAsm
			defer func() { packAsm = saved }()
			testPackLayout(t)
		})
	}
}

// testPackLayout is TestPackLayout's table, run with packAsm as it is.
func testPackLayout(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
		return s
	}
	dirty := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(math.NaN())
		}
		return s
	}
	sizes := []struct{ rows, kc int }{
		{7, 0}, {1, 1}, {5, 3}, {6, 7}, {12, 8}, {13, 17}, {31, 33}, {33, 64}, {96, 256}, {70, 129},
	}
	for _, trans := range []bool{false, true} {
		for _, alpha := range []float32{1, 0.5} {
			for _, mr := range []int{6, 4, 8} {
				for _, s := range sizes {
					t.Run(fmt.Sprintf("A/trans=%v/alpha=%v/mr=%d/%dx%d", trans, alpha, mr, s.rows, s.kc), func(t *testing.T) {
						ic, pc := 3, 5
						rows, cols := ic+s.rows, pc+s.kc
						if trans {
							rows, cols = cols, rows
						}
						lda := cols + 2
						a := fill(rows * lda)
						want := refPackA(trans, a, lda, ic, pc, s.rows, s.kc, mr, alpha)
						got := dirty(len(want) + 7)
						packA(trans, a, lda, ic, pc, s.rows, s.kc, mr, alpha, got)
						checkPacked(t, got, want)
					})
				}
			}
		}
		for _, nr := range []int{16, 32, 8, 12} {
			for _, s := range sizes {
				t.Run(fmt.Sprintf("B/trans=%v/nr=%d/%dx%d", trans, nr, s.kc, s.rows), func(t *testing.T) {
					pc, jc := 5, 3
					rows, cols := pc+s.kc, jc+s.rows
					if trans {
						rows, cols = cols, rows
					}
					ldb := cols + 1
					b := fill(rows * ldb)
					want := refPackB(trans, b, ldb, pc, jc, s.kc, s.rows, nr)
					got := dirty(len(want) + 7)
					packB(trans, b, ldb, pc, jc, s.kc, s.rows, nr, got)
					checkPacked(t, got, want)
				})
			}
		}
	}
}

// BenchmarkPack reports packA's and packB's speed (GB/s of the matrix
// packed) on one cache block (kc=256, mc=96, nc=3072) and on whole MTAN
// operands packed block by block as blocked does: the conv weights W
// (64×576, 512×4608) as A, also transposed (Wᵀ, the input gradient), and
// the im2col matrix (576 rows × 6144 positions) as a transposed B (the
// weight gradient dY·colᵀ).
func BenchmarkPack(b *testing.B) {
	mr, nr := 6, 32
	if active != nil {
		mr, nr = active.mr, active.nr
	}
	rng := rand.New(rand.NewSource(5))
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = rng.Float32()
		}
		return s
	}
	bufA := make([]float32, blockM*blockK)
	bufB := make([]float32, blockN*blockK)
	// op is m×k for A (k×n for B); stored transposed when trans.
	type shape struct {
		name    string
		isB     bool
		trans   bool
		m, k, n int
		alpha   float32
	}
	var shapes []shape
	for _, alpha := range []float32{1, 0.5} {
		for _, trans := range []bool{false, true} {
			shapes = append(shapes,
				shape{"block", false, trans, blockM, blockK, 0, alpha},
				shape{"w64x576", false, trans, 64, 576, 0, alpha},
				shape{"w512x4608", false, trans, 512, 4608, 0, alpha},
			)
			if trans {
				shapes[len(shapes)-2].m, shapes[len(shapes)-2].k = 576, 64
				shapes[len(shapes)-1].m, shapes[len(shapes)-1].k = 4608, 512
			}
		}
	}
	for _, trans := range []bool{false, true} {
		shapes = append(shapes,
			shape{"block", true, trans, 0, blockK, blockN, 1},
			shape{"col576x6144", true, trans, 0, 6144, 576, 1},
		)
	}
	for _, s := range shapes {
		var name string
		var f func()
		if s.isB {
			rows, cols := s.k, s.n
			if s.trans {
				rows, cols = cols, rows
			}
			m := fill(rows * cols)
			name = fmt.Sprintf("B/trans=%v/%s", s.trans, s.name)
			f = func() {
				for jc := 0; jc < s.n; jc += blockN {
					for pc := 0; pc < s.k; pc += blockK {
						packB(s.trans, m, cols, pc, jc, min(blockK, s.k-pc), min(blockN, s.n-jc), nr, bufB)
					}
				}
			}
		} else {
			rows, cols := s.m, s.k
			if s.trans {
				rows, cols = cols, rows
			}
			m := fill(rows * cols)
			name = fmt.Sprintf("A/trans=%v/alpha=%v/%s", s.trans, s.alpha, s.name)
			f = func() {
				for pc := 0; pc < s.k; pc += blockK {
					for ic := 0; ic < s.m; ic += blockM {
						packA(s.trans, m, cols, ic, pc, min(blockM, s.m-ic), min(blockK, s.k-pc), mr, s.alpha, bufA)
					}
				}
			}
		}
		size := s.m * s.k
		if s.isB {
			size = s.k * s.n
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				f()
			}
			b.ReportMetric(4*float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
