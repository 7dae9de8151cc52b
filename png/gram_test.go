package png

import (
	"fmt"
	"math"
	"math/rand/v2"
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
