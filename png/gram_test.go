package png

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// gramRelTol bounds |K_ij − reference| relative to ‖∇ℓ_i‖·‖∇ℓ_j‖: the two
// sums differ only in the order of float64 additions.
const gramRelTol = 1e-12

// randJacobian returns an m×n Jacobian of standard normal float32 values.
func randJacobian(rng *rand.Rand, m, n int) Jacobian {
	J := NewJacobian(m, n)
	for i := range J.Data {
		J.Data[i] = float32(rng.NormFloat64())
	}
	return J
}

// randVec32 returns n standard normal float32 values.
func randVec32(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// naiveGram returns J Jᵀ and J·extra by plain float64 loops.
func naiveGram(J Jacobian, extra []float32) (K, je []float64) {
	m := J.M
	K = make([]float64, m*m)
	je = make([]float64, m)
	for i := 0; i < m; i++ {
		for j := 0; j < m; j++ {
			var s float64
			for k := 0; k < J.N; k++ {
				s += float64(J.Row(i)[k]) * float64(J.Row(j)[k])
			}
			K[i*m+j] = s
		}
		if extra != nil {
			var s float64
			for k := 0; k < J.N; k++ {
				s += float64(J.Row(i)[k]) * float64(extra[k])
			}
			je[i] = s
		}
	}
	return K, je
}

func TestGram(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, m := range []int{1, 2, 3, 5, 10, 32} {
		bs := colBlock(m)
		// n covers: tiny, one partial block, a block ± tail, several blocks
		// with a tail, and enough columns for 3 workers.
		for _, n := range []int{0, 1, 7, bs - 1, bs + 5, 3*bs + 17, 3*minColsPerWorker + 101} {
			if m*n > 2e6 {
				n = 2e6 / m
			}
			J := randJacobian(rng, m, n)
			extra := randVec32(rng, n)
			want, wantJE := naiveGram(J, extra)
			for _, workers := range []int{1, 2, 3} {
				t.Run(fmt.Sprintf("m=%d/n=%d/workers=%d", m, n, workers), func(t *testing.T) {
					K := make([]float64, m*m)
					Gram(K, J, workers)
					je := make([]float64, m)
					K2 := make([]float64, m*m)
					gramPass(K2, je, J, extra, workers)
					var ne float64
					for _, x := range extra {
						ne += float64(x) * float64(x)
					}
					for i := 0; i < m; i++ {
						for j := 0; j < m; j++ {
							tol := gramRelTol * math.Sqrt(want[i*m+i]*want[j*m+j])
							if d := math.Abs(K[i*m+j] - want[i*m+j]); d > tol {
								t.Fatalf("K[%d][%d] = %v, want %v (|diff| %g > %g)", i, j, K[i*m+j], want[i*m+j], d, tol)
							}
							if K2[i*m+j] != K[i*m+j] {
								t.Fatalf("gramPass with extra: K[%d][%d] = %v, Gram gives %v", i, j, K2[i*m+j], K[i*m+j])
							}
						}
						tol := gramRelTol * math.Sqrt(want[i*m+i]*ne)
						if d := math.Abs(je[i] - wantJE[i]); d > tol {
							t.Fatalf("J·extra[%d] = %v, want %v", i, je[i], wantJE[i])
						}
					}
				})
			}
		}
	}
}

func TestGramPanicsOnShape(t *testing.T) {
	tests := []struct {
		name string
		dst  []float64
		J    Jacobian
	}{
		{"short dst", make([]float64, 3), NewJacobian(2, 4)},
		{"short data", make([]float64, 4), Jacobian{M: 2, N: 4, Data: make([]float32, 7)}},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Gram did not panic", tt.name)
				}
			}()
			Gram(tt.dst, tt.J, 1)
		}()
	}
}

// combineRelTol bounds |v_k − reference| relative to the float64 sum of
// |terms|: v is accumulated in float64 and rounded to float32 once.
const combineRelTol = 1e-7

func TestCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for _, m := range []int{1, 2, 3, 5} {
		for _, n := range []int{1, combineBlock + 3, 3*minColsPerWorker + 7} {
			J := randJacobian(rng, m, n)
			for _, withExtra := range []bool{false, true} {
				var extra []float32
				if withExtra {
					extra = randVec32(rng, n)
				}
				a := make([]float64, m)
				for i := range a {
					if i != 1 { // a zero coefficient skips its row
						a[i] = rng.NormFloat64()
					}
				}
				for _, workers := range []int{1, 2, 3} {
					v := make([]float32, n)
					norm := combine(v, J, a, extra, workers)
					var ss float64
					for k := 0; k < n; k++ {
						var want, mag float64
						if extra != nil {
							want, mag = float64(extra[k]), math.Abs(float64(extra[k]))
						}
						for i := 0; i < m; i++ {
							want += a[i] * float64(J.Row(i)[k])
							mag += math.Abs(a[i] * float64(J.Row(i)[k]))
						}
						if d := math.Abs(float64(v[k]) - want); d > combineRelTol*mag {
							t.Fatalf("m=%d n=%d extra=%v workers=%d: v[%d] = %v, want %v", m, n, withExtra, workers, k, v[k], want)
						}
						ss += float64(v[k]) * float64(v[k])
					}
					if d := math.Abs(norm - math.Sqrt(ss)); d > 1e-12*math.Sqrt(ss) {
						t.Fatalf("m=%d n=%d: ‖v‖ = %v, want %v", m, n, norm, math.Sqrt(ss))
					}
				}
			}
		}
	}
}

// TestCombineFewMatchesBlocks checks combine's one-pass paths for at most
// four rows (combineFew, and combineOne and combineTwo for one and two)
// against the float64 block path, bit for bit
// (values and norm; the norm to rounding where combineTwo's kernel sums
// it), with and without extra, for every row count
// (zero coefficients included), values whose sums are −0, and columns
// that cancel (coefficients 1), where another grouping of the sum shows.
func TestCombineFewMatchesBlocks(t *testing.T) {
	defer func() { combineFused = true }()
	rng := rand.New(rand.NewPCG(9, 9))
	n := 2*combineBlock + 5
	for m := 1; m <= 5; m++ {
		J := randJacobian(rng, m, n)
		for k := 0; k < 40; k++ { // columns of −0: the sum's sign is kept or not as the block path keeps it
			for i := 0; i < m; i++ {
				J.Row(i)[k] = float32(math.Copysign(0, -1))
			}
		}
		for k := 40; k < 120; k++ { // cancelling columns: with a = 1, another grouping of the sum shows
			big := float32(1<<30) * (1 + rng.Float32())
			for i := 0; i < m; i++ {
				J.Row(i)[k] = rng.Float32() * 1e-3
			}
			J.Row(0)[k] = big
			if m > 1 {
				J.Row(1)[k] = -big
			}
		}
		for _, withExtra := range []bool{false, true} {
			var extra []float32
			if withExtra {
				extra = randVec32(rng, n)
				for k := 0; k < 20; k++ {
					extra[k] = float32(math.Copysign(0, -1))
				}
			}
			for zero := -3; zero < m; zero++ { // -3: every coefficient zero
				a := make([]float64, m)
				for i := range a {
					switch {
					case zero == -3:
					case zero == -2:
						a[i] = 1
					case i != zero:
						a[i] = rng.NormFloat64()
					}
				}
				run := func(fused bool) ([]float32, float64) {
					combineFused = fused
					v := make([]float32, n)
					if fused { // every row count through combineFew, as combine sends it three and four
						var ss float64
						for b0 := 0; b0 < n; b0 += combineBlock {
							b1 := min(n, b0+combineBlock)
							var xs [4][]float32
							var as [4]float64
							r := 0
							for i := range m {
								if a[i] != 0 && r < 4 {
									xs[r], as[r] = J.Row(i)[b0:b1], a[i]
									r++
								}
							}
							if r != countNonzero(a) {
								return nil, 0 // five rows: combine's block path only
							}
							var e []float32
							if extra != nil {
								e = extra[b0:b1]
							}
							ss = combineFew(v[b0:b1], e, as, xs, r, ss)
						}
						return v, math.Sqrt(ss)
					}
					return v, combine(v, J, a, extra, 1)
				}
				got, gotNorm := run(true)
				want, wantNorm := run(false)
				if got == nil {
					continue
				}
				for k := range want {
					if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
						t.Fatalf("m=%d extra=%v a=%v: v[%d] = %v one pass, %v by blocks", m, withExtra, a, k, got[k], want[k])
					}
				}
				if gotNorm != wantNorm {
					t.Fatalf("m=%d extra=%v: ‖v‖ = %v one pass, %v by blocks", m, withExtra, gotNorm, wantNorm)
				}
				// combine itself, which sends one and two rows to
				// combineOne and combineTwo, three or four to combineFew
				// and none to the block path.
				combineFused = true
				v := make([]float32, n)
				norm := combine(v, J, a, extra, 1)
				for k := range want {
					if math.Float32bits(v[k]) != math.Float32bits(want[k]) {
						t.Fatalf("m=%d extra=%v a=%v: v[%d] = %v by combine, %v by blocks", m, withExtra, a, k, v[k], want[k])
					}
				}
				// combineTwo's kernel sums the squares in eight lanes:
				// the norm to rounding, the Go loop's bits without it.
				if norm != wantNorm && !(useVec && m >= 2 && countNonzero(a) == 2 && math.Abs(norm-wantNorm) <= 1e-14*wantNorm) {
					t.Fatalf("m=%d extra=%v a=%v: ‖v‖ = %v by combine, %v by blocks", m, withExtra, a, norm, wantNorm)
				}
				withVec(false, func() {
					if norm := combine(v, J, a, extra, 1); norm != wantNorm {
						t.Fatalf("m=%d extra=%v a=%v: ‖v‖ = %v by combine's Go loops, %v by blocks", m, withExtra, a, norm, wantNorm)
					}
				})
			}
		}
	}
}

// countNonzero counts the nonzero values of a.
func countNonzero(a []float64) int {
	c := 0
	for _, v := range a {
		if v != 0 {
			c++
		}
	}
	return c
}

// TestGramSameBitsAnyWorkers: K and J·extra are the same bits on any
// number of workers (the chunks' partials are added in chunk order), for
// the one-pass loops (m = 2, 3) and the blocked one (more rows).
func TestGramSameBitsAnyWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	n := 5*minColsPerWorker + 333
	for _, m := range []int{1, 2, 3, 4} {
		J := randJacobian(rng, m, n)
		extra := randVec32(rng, n)
		var wantK, wantJE []float64
		for _, workers := range []int{1, 2, 3, 5, 8} {
			K, je := make([]float64, m*m), make([]float64, m)
			gramPass(K, je, J, extra, workers)
			if wantK == nil {
				wantK, wantJE = K, je
				continue
			}
			if !slices.Equal(K, wantK) || !slices.Equal(je, wantJE) {
				t.Errorf("m=%d workers=%d: K %v je %v, one worker gives %v %v", m, workers, K, je, wantK, wantJE)
			}
		}
	}
}

// gramRangeRef is gramRange2 and gramRange3's reference for any m: the
// lower triangle of K then J·x added into part (m·m + m), each sum in
// column order.
func gramRangeRef(part []float64, J Jacobian, x []float32, lo, hi int) {
	m, n := J.M, J.N
	for c := lo; c < hi; c++ {
		for i := 0; i < m; i++ {
			vi := float64(J.Data[i*n+c])
			for j := 0; j <= i; j++ {
				part[i*m+j] += vi * float64(J.Data[j*n+c])
			}
			if x != nil {
				part[m*m+i] += vi * float64(x[c])
			}
		}
	}
}

// TestGramRanges: gramRange2 and gramRange3 give the column-order
// reference's bits in Go, and their kernels its sums to rounding
// (relative to the sum of the terms' magnitudes), with and without
// extra, on random data with special values, every length to 67 and a
// few large, from unaligned starts; the partial's entries outside K's
// lower triangle (and J·extra's without extra) are left as they were.
func TestGramRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 1))
	for _, m := range []int{2, 3} {
		run := func(part []float64, J Jacobian, x []float32, lo, hi int) {
			if m == 2 {
				gramRange2(part, J, x, lo, hi)
			} else {
				gramRange3(part, J, x, lo, hi)
			}
		}
		for _, special := range []bool{false, true} {
			for _, withExtra := range []bool{false, true} {
				for _, n := range vecLengths() {
					off := rng.IntN(4)
					N := n + off + rng.IntN(3)
					J := NewJacobian(m, N)
					copy(J.Data, vecData(rng, m*N, 1, special))
					var x, absX []float32
					if withExtra {
						x = vecData(rng, N, 1, special)
						absX = make([]float32, N)
						for k, v := range x {
							absX[k] = float32(math.Abs(float64(v)))
						}
					}
					per := m*m + m
					init := make([]float64, per) // a partial that already holds sums
					for k := range init {
						init[k] = float64(k) + 0.5
					}
					want := slices.Clone(init)
					gramRangeRef(want, J, x, off, off+n)
					absJ := J
					absJ.Data = make([]float32, len(J.Data))
					for k, v := range J.Data {
						absJ.Data[k] = float32(math.Abs(float64(v)))
					}
					scale := make([]float64, per)
					gramRangeRef(scale, absJ, absX, off, off+n)
					name := fmt.Sprintf("m=%d/special=%v/extra=%v/n=%d", m, special, withExtra, n)
					for _, vec := range []bool{false, true} {
						got := slices.Clone(init)
						withVec(vec, func() { run(got, J, x, off, off+n) })
						for k := range got {
							ok := math.Float64bits(got[k]) == math.Float64bits(want[k])
							if vec {
								ok = sameOrClose(got[k], want[k], scale[k]+math.Abs(init[k]), 0x1p-52*float64(n+8))
							}
							if !ok {
								t.Errorf("%s vec=%v: part[%d] = %v, reference %v (terms' magnitudes %v)", name, vec, k, got[k], want[k], scale[k])
							}
						}
					}
				}
			}
		}
	}
}

// TestGramKernelExact: on values whose products and sums are exact in
// float64 the m = 2 and m = 3 kernels' sums are the Go loop's bits,
// whatever their order; an Inf or NaN in J or extra makes the sums it
// enters non-finite on both paths, so that the check on K still names it.
func TestGramKernelExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(74, 1))
	for _, m := range []int{2, 3} {
		for _, n := range vecLengths() {
			J := NewJacobian(m, n)
			for k := range J.Data {
				J.Data[k] = float32(rng.IntN(64)-32) / 8
			}
			x := make([]float32, n)
			for k := range x {
				x[k] = float32(rng.IntN(64) - 32)
			}
			bad := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
			for _, at := range []int{-1, 0, 7, 8, n - 1, m*n + n/2} {
				Jb, xb := J, slices.Clone(x)
				Jb.Data = slices.Clone(J.Data)
				v := bad[rng.IntN(len(bad))]
				switch {
				case at < 0 || n == 0:
				case at < m*n && at < n:
					Jb.Data[at] = v
				default:
					xb[n/2] = v
				}
				want, got := make([]float64, m*m+m), make([]float64, m*m+m)
				gramRangeRef(want, Jb, xb, 0, n)
				withVec(true, func() {
					if m == 2 {
						gramRange2(got, Jb, xb, 0, n)
					} else {
						gramRange3(got, Jb, xb, 0, n)
					}
				})
				for k := range got {
					if !sameOrClose(got[k], want[k], 0, 0) {
						t.Errorf("m=%d n=%d bad at %d: kernel part[%d] = %v, reference %v", m, n, at, k, got[k], want[k])
					}
				}
			}
		}
	}
}
