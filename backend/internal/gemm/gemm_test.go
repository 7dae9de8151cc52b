package gemm

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// naive computes alpha·op(a)·op(b) + beta·c in float64 (beta 0 overwrites)
// and the bound Σ_l |op(a)[i,l]|·|op(b)[l,j]| for the error check.
func naive(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (want, bound []float64) {
	want = make([]float64, len(c))
	bound = make([]float64, len(c))
	for i := range c {
		want[i] = float64(c[i])
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, abs float64
			for l := 0; l < k; l++ {
				var av, bv float32
				if tA {
					av = a[l*lda+i]
				} else {
					av = a[i*lda+l]
				}
				if tB {
					bv = b[j*ldb+l]
				} else {
					bv = b[l*ldb+j]
				}
				s += float64(av) * float64(bv)
				abs += math.Abs(float64(av) * float64(bv))
			}
			o := i*ldc + j
			old := 0.0
			if beta != 0 {
				old = float64(beta) * float64(c[o])
			}
			want[o] = float64(alpha)*s + old
			bound[o] = math.Abs(float64(alpha))*abs + math.Abs(old)
		}
	}
	return want, bound
}

// problem is one random Sgemm call.
type problem struct {
	tA, tB        bool
	m, n, k       int
	alpha, beta   float32
	lda, ldb, ldc int
}

// run checks Sgemm (or SgemmParallel with workers > 0) on p against naive:
// |got-want| ≤ (k+2)·eps·bound per element, elements outside the m×n
// window of c untouched.
func run(t *testing.T, rng *rand.Rand, p problem, workers int) {
	t.Helper()
	ar, br := p.m, p.k
	if p.tA {
		ar = p.k
	}
	if p.tB {
		br = p.n
	}
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
		return s
	}
	a, b, c := fill(ar*p.lda), fill(br*p.ldb), fill(p.m*p.ldc)
	if p.beta == 0 {
		for i := range c {
			if rng.Intn(3) == 0 {
				c[i] = float32(math.NaN())
			}
		}
	}
	want, bound := naive(p.tA, p.tB, p.m, p.n, p.k, p.alpha, a, p.lda, b, p.ldb, p.beta, c, p.ldc)
	orig := append([]float32(nil), c...)
	if workers > 0 {
		SgemmParallel(workers, p.tA, p.tB, p.m, p.n, p.k, p.alpha, a, p.lda, b, p.ldb, p.beta, c, p.ldc)
	} else {
		Sgemm(p.tA, p.tB, p.m, p.n, p.k, p.alpha, a, p.lda, b, p.ldb, p.beta, c, p.ldc)
	}
	const eps = 1.0 / (1 << 23)
	for i := 0; i < p.m; i++ {
		for j := 0; j < p.ldc; j++ {
			o := i*p.ldc + j
			if j >= p.n {
				if math.Float32bits(c[o]) != math.Float32bits(orig[o]) {
					t.Fatalf("%s %+v: c[%d,%d] outside the product changed", Kernel(), p, i, j)
				}
				continue
			}
			tol := float64(p.k+2) * eps * (bound[o] + 1e-30)
			if d := math.Abs(float64(c[o]) - want[o]); !(d <= tol) {
				t.Fatalf("%s %+v: c[%d,%d] = %v, want %v (tol %g)", Kernel(), p, i, j, c[o], want[o], tol)
			}
		}
	}
}

// randomProblem draws sizes in 1..maxDim, transposes, alpha/beta among
// the special values and leading dimensions at or above the minimum.
func randomProblem(rng *rand.Rand, maxDim int) problem {
	p := problem{
		tA: rng.Intn(2) == 0, tB: rng.Intn(2) == 0,
		m: 1 + rng.Intn(maxDim), n: 1 + rng.Intn(maxDim), k: 1 + rng.Intn(maxDim),
		alpha: []float32{1, -1, 0.5, 2.5, 0}[rng.Intn(5)],
		beta:  []float32{0, 1, -0.75, 2}[rng.Intn(4)],
	}
	ac, bc := p.k, p.n
	if p.tA {
		ac = p.m
	}
	if p.tB {
		bc = p.k
	}
	extra := func() int { return []int{0, 0, 1, 3, 17}[rng.Intn(5)] }
	p.lda, p.ldb, p.ldc = ac+extra(), bc+extra(), p.n+extra()
	return p
}

// paths runs f with the assembly micro-kernel (where there is one) and with
// the forced gonum fallback.
func paths(t *testing.T, f func(t *testing.T)) {
	t.Run("fallback", func(t *testing.T) {
		useKernel = false
		defer func() { useKernel = true }()
		f(t)
	})
	if active == nil {
		t.Log("no micro-kernel on this CPU")
		return
	}
	for _, kr := range kernels() {
		t.Run(kr.name, func(t *testing.T) {
			saved := active
			active = kr
			defer func() { active = saved }()
			f(t)
		})
		t.Run(kr.name+"-far", func(t *testing.T) { // every direct product prefetching its rows
			saved, fr := active, farRow
			active, farRow = kr, 0
			defer func() { active, farRow = saved, fr }()
			f(t)
		})
		if kr.dot == nil {
			continue
		}
		t.Run(kr.name+"-dots", func(t *testing.T) {
			saved, k, nk, r := active, dotMinK, dotMaxB, dotMinRatio
			active, dotMinK, dotMaxB, dotMinRatio = kr, 1, 1<<30, 0
			defer func() { active, dotMinK, dotMaxB, dotMinRatio = saved, k, nk, r }()
			f(t)
		})
	}
}

func TestSgemmEdges(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(1))
		for _, tc := range []struct {
			name    string
			m, n, k int
		}{
			{"1x1x1", 1, 1, 1},
			{"tile", 6, 16, 1},
			{"tile512", 6, 32, 3},
			{"edge-m", 7, 32, 5},
			{"edge-n", 12, 17, 9},
			{"edge-both", 13, 33, 70},
			{"row", 1, 70, 70},
			{"col", 70, 1, 70},
			{"blockK+1", 5, 20, blockK + 1},
			{"blockM+1", blockM + 1, 40, 30},
			{"lenet-conv1", 10, 784, 81},
			{"lenet-conv2", 20, 100, 250},
			{"dots-tail", 7, 9, 16*5 + 15},
			{"tall-thin", 70, 3, 20},
			{"tall-16", 40, 16, 9},
			{"dots-exact", 3, 4, 16},
			{"dots-short", 2, 3, 15},
		} {
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				for _, ab := range [][2]float32{{1, 0}, {1, 1}, {-0.5, 2}, {0, 0}, {0, 3}} {
					p := problem{tA: tr[0], tB: tr[1], m: tc.m, n: tc.n, k: tc.k, alpha: ab[0], beta: ab[1]}
					p.lda, p.ldb, p.ldc = p.k+2, p.n+1, p.n+3
					if p.tA {
						p.lda = p.m + 2
					}
					if p.tB {
						p.ldb = p.k + 1
					}
					run(t, rng, p, 0)
				}
			}
		}
	})
}

func TestSgemmRandom(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(2))
		for range 1500 {
			run(t, rng, randomProblem(rng, 70), 0)
		}
	})
}

func TestSgemmParallel(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(3))
		for _, w := range []int{1, 2, 3, 8} {
			for range 20 {
				p := randomProblem(rng, 300)
				run(t, rng, p, w)
			}
			run(t, rng, problem{m: 64, n: 1024, k: 80, alpha: 1, lda: 80, ldb: 1024, ldc: 1024}, w)
			// few columns, many rows: split by rows (gridOf), every transpose
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				p := problem{tA: tr[0], tB: tr[1], m: 1000, n: 96, k: 40, alpha: 0.5, beta: 1.5, lda: 40, ldb: 96, ldc: 100}
				if tr[0] {
					p.lda = 1000
				}
				if tr[1] {
					p.ldb = 40
				}
				run(t, rng, p, w)
			}
		}
		if s := splitOf(8, 1000, 96, 40); Accelerated() && s.rb < 2 {
			t.Fatalf("a 1000×96×40 product on 8 workers is not split by rows (%d row blocks)", s.rb)
		}
	})
}

func TestSgemmZeroSizes(t *testing.T) {
	c := []float32{float32(math.NaN()), 5}
	Sgemm(false, false, 0, 2, 3, 1, nil, 3, make([]float32, 6), 2, 0, nil, 2)
	Sgemm(false, false, 1, 2, 0, 1, nil, 1, nil, 2, 0, c, 2)
	if c[0] != 0 || c[1] != 0 {
		t.Fatalf("k = 0, beta = 0: c = %v, want zeros", c)
	}
}

func TestSgemmPanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"negative", func() { Sgemm(false, false, -1, 1, 1, 1, nil, 1, nil, 1, 0, nil, 1) }},
		{"lda", func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 1, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		}},
		{"short c", func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 3), 2)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tc.f()
		})
	}
}

func FuzzSgemm(f *testing.F) {
	f.Add(uint8(7), uint8(17), uint8(9), false, true, int64(1))
	f.Add(uint8(1), uint8(1), uint8(1), true, true, int64(2))
	f.Fuzz(func(t *testing.T, m, n, k uint8, tA, tB bool, seed int64) {
		rng := rand.New(rand.NewSource(seed))
		p := problem{tA: tA, tB: tB, m: int(m%100) + 1, n: int(n%100) + 1, k: int(k) + 1, alpha: 1, beta: 1}
		p.lda, p.ldb, p.ldc = p.k, p.n, p.n
		if tA {
			p.lda = p.m
		}
		if tB {
			p.ldb = p.k
		}
		run(t, rng, p, 0)
	})
}

// TestDirectAMatchesPacked checks that products reading a in place
// (kernel.directA: few columns, untransposed a, whole panels of rows) give
// the packed path's bits: the same sums in the same order. The shapes
// cover the swapped weight gradients of 64- and 128-filter 3×3
// convolutions (576 rows, 64 or 128 columns), partial column panels, k across several blocks and
// within one, beta 0 and 1, a row stride longer than k, and an
// untransposed b.
func TestDirectAMatchesPacked(t *testing.T) {
	if active == nil || active.directA == nil {
		t.Skip("no kernel reading a in place on this CPU")
	}
	rng := rand.New(rand.NewSource(1))
	for _, s := range []struct {
		tB      bool
		m, n, k int
		beta    float32
	}{
		{true, 576, 64, 6144, 1},
		{true, 576, 128, 700, 1},
		{true, 576, 64, 300, 0},
		{true, 96, 40, 513, 1},
		{false, 12, 33, 700, 0},
		{true, 1152, 64, 1000, 1},
		{false, 198, 64, 257, 1},
	} {
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			lda := s.k + 3
			a := make([]float32, s.m*lda)
			for i := range a {
				a[i] = float32(rng.NormFloat64())
			}
			b := make([]float32, s.k*s.n)
			for i := range b {
				b[i] = float32(rng.NormFloat64())
			}
			ldb := s.n
			if s.tB {
				ldb = s.k
			}
			c0 := make([]float32, s.m*s.n)
			for i := range c0 {
				c0[i] = float32(rng.NormFloat64())
			}
			run := func(on bool) []float32 {
				defer func(v bool, d int) { useDirectA, dotMaxB = v, d }(useDirectA, dotMaxB)
				useDirectA, dotMaxB = on, 0 // both through blocked, not the dot products
				c := append([]float32{}, c0...)
				Sgemm(false, s.tB, s.m, s.n, s.k, 1, a, lda, b, ldb, s.beta, c, s.n)
				return c
			}
			want, got := run(false), run(true)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("c[%d] = %v reading a in place, %v packed", i, got[i], want[i])
				}
			}
		})
	}
}

// TestWideMatchesNarrow checks that the 2·mr-row kernels (kernel.fn2,
// direct2, directA2) give the bits of the mr-row ones on every path they
// take: packed a and b, b in place (m ≤ directMaxM, also prefetching far
// rows), a in place (few columns), c written over (beta 0, with NaN in c)
// and added to, row counts that leave an mr-row and a partial panel, and
// k across several blocks.
func TestWideMatchesNarrow(t *testing.T) {
	if active == nil || active.fn2 == nil {
		t.Skip("no 2·mr-row kernels on this CPU")
	}
	rng := rand.New(rand.NewSource(3))
	for _, s := range []struct {
		tA, tB  bool
		m, n, k int
		beta    float32
		farRow  int
	}{
		{false, false, 128, 1536, 1152, 0, farRow}, // packed, MTAN's 128-filter forward band
		{true, false, 576, 300, 64, 1, farRow},     // packed, transposed a (input gradient)
		{false, false, 64, 700, 576, 0, farRow},    // b in place
		{false, false, 60, 200, 300, 1, 0},         // b in place, far rows
		{false, true, 576, 64, 6144, 1, farRow},    // a in place (a weight gradient)
		{false, false, 1152, 100, 257, 0, farRow},  // a in place, beta 0
		{false, false, 101, 95, 513, 0, 0},         // edges everywhere, c prefetched
		{true, true, 30, 40, 29, 1, farRow},        // one 12-row tile and an edge
	} {
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			defer func(fr int) { farRow = fr }(farRow)
			farRow = s.farRow
			fill := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return v
			}
			lda, ldb := s.k, s.n
			if s.tA {
				lda = s.m
			}
			if s.tB {
				ldb = s.k
			}
			a, b, c0 := fill(s.m*s.k), fill(s.k*s.n), fill(s.m*s.n)
			if s.beta == 0 {
				for i := range c0 {
					if i%3 == 0 {
						c0[i] = float32(math.NaN())
					}
				}
			}
			run := func(on bool) []float32 {
				defer func(v bool) { useWide = v }(useWide)
				useWide = on
				c := append([]float32{}, c0...)
				Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, b, ldb, s.beta, c, s.n)
				return c
			}
			want, got := run(false), run(true)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.IsNaN(float64(got[i])) {
					t.Fatalf("c[%d] = %v with 2·mr-row kernels, %v without", i, got[i], want[i])
				}
			}
		})
	}
}

// TestSgemmBlocked checks that SgemmBlocked gives the bits of Sgemm with
// the dot products off (dotMaxB 0) on products Sgemm runs as dot
// products, and matches the float64 reference.
func TestSgemmBlocked(t *testing.T) {
	if active == nil || active.dot == nil {
		t.Skip("no dot-product kernel on this CPU")
	}
	rng := rand.New(rand.NewSource(4))
	for _, s := range [][3]int{{64, 64, 128}, {7, 9, 95}, {13, 20, 300}} {
		m, n, k := s[0], s[1], s[2]
		p := problem{tB: true, m: m, n: n, k: k, alpha: 1, beta: 1, lda: k + 1, ldb: k + 2, ldc: n}
		run(t, rng, p, 0) // Sgemm (dot products) against the reference
		a, b := make([]float32, m*p.lda), make([]float32, n*p.ldb)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		c0 := make([]float32, m*n)
		for i := range c0 {
			c0[i] = float32(rng.NormFloat64())
		}
		got, want, dot := append([]float32{}, c0...), append([]float32{}, c0...), append([]float32{}, c0...)
		SgemmBlocked(false, true, m, n, k, 1, a, p.lda, b, p.ldb, 1, got, n)
		Sgemm(false, true, m, n, k, 1, a, p.lda, b, p.ldb, 1, dot, n)
		func() {
			defer func(d int) { dotMaxB = d }(dotMaxB)
			dotMaxB = 0
			Sgemm(false, true, m, n, k, 1, a, p.lda, b, p.ldb, 1, want, n)
		}()
		same, sameDot := true, true
		for i := range want {
			same = same && math.Float32bits(got[i]) == math.Float32bits(want[i])
			sameDot = sameDot && math.Float32bits(got[i]) == math.Float32bits(dot[i])
		}
		if !same {
			t.Fatalf("%v: SgemmBlocked differs from the packed product", s)
		}
		if sameDot {
			t.Fatalf("%v: SgemmBlocked gives the dot products' bits: did Sgemm not run them?", s)
		}
	}
}
