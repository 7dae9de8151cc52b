package png

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchSizes are the benchmark grid: tasks m × parameters n (4.4e7 is the
// size of the largest model we tune; skipped with -short).
var (
	benchMs = []int{2, 3, 10}
	benchNs = []int{1e4, 1e6, 44e6}
)

// benchJacobian returns an m×n Jacobian filled cheaply (a fixed-seed
// xorshift), with a common component so the PNG control is on.
func benchJacobian(m, n int) Jacobian {
	J := NewJacobian(m, n)
	x := uint32(2463534242)
	for i := range J.Data {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		J.Data[i] = float32(x)/float32(1<<32) - 0.4
	}
	return J
}

// benchGrid runs f for every (m, n) of the grid as a sub-benchmark that
// reports the bytes of J (4·m·n) per iteration.
func benchGrid(b *testing.B, f func(b *testing.B, J Jacobian)) {
	for _, m := range benchMs {
		for _, n := range benchNs {
			b.Run(fmt.Sprintf("m=%d/n=%.0e", m, float64(n)), func(b *testing.B) {
				if testing.Short() && n > 1e6 {
					b.Skip("skipping n = 4.4e7 (1.76 GB at m = 10) in short mode")
				}
				J := benchJacobian(m, n)
				b.SetBytes(int64(4 * m * n))
				b.ResetTimer()
				f(b, J)
			})
		}
	}
}

// BenchmarkDirection measures one PNG step (Gram pass, min-norm, dual,
// v pass: J is read twice) with the control on. SetBytes counts J once, so
// the MB/s column is bytes of J per second of a whole step.
func BenchmarkDirection(b *testing.B) {
	benchGrid(b, func(b *testing.B, J Jacobian) {
		rng := rand.New(rand.NewPCG(1, 1))
		coef := make([]float64, J.M)
		for i := range coef {
			coef[i] = rng.NormFloat64()
		}
		v := make([]float32, J.N)
		p := PNG{Settings{Gamma: 1e-9}}
		for i := 0; i < b.N; i++ {
			if _, err := p.Direction(v, J, Gradient{Coef: coef}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGram measures K = J Jᵀ alone (one pass over J).
func BenchmarkGram(b *testing.B) {
	benchGrid(b, func(b *testing.B, J Jacobian) {
		K := make([]float64, J.M*J.M)
		for i := 0; i < b.N; i++ {
			Gram(K, J, 0)
		}
	})
}

// BenchmarkQP measures the m-dimensional solvers on random full-rank
// Gram matrices.
func BenchmarkQP(b *testing.B) {
	for _, m := range []int{2, 3, 10, 32} {
		rng := rand.New(rand.NewPCG(2, 2))
		G := randRows(rng, m, m+5, 1)
		for i := range G {
			G[i][0] += 2
		}
		K := gramOf(G)
		bv := make([]float64, m)
		for i := range bv {
			bv[i] = rng.NormFloat64()
		}
		b.Run(fmt.Sprintf("MinNorm/m=%d", m), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				MinNorm(K, m)
			}
		})
		b.Run(fmt.Sprintf("SolveDual/m=%d", m), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := SolveDual(K, m, bv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCombine measures the v pass v = Jᵀa + extra alone (one pass
// over J).
func BenchmarkCombine(b *testing.B) {
	benchGrid(b, func(b *testing.B, J Jacobian) {
		a := make([]float64, J.M)
		for i := range a {
			a[i] = float64(i + 1)
		}
		v := make([]float32, J.N)
		for i := 0; i < b.N; i++ {
			combine(v, J, a, nil, 0)
		}
	})
}

// BenchmarkMemoryRead is the yardstick for the MB/s of the benchmarks
// above: the fastest a plain Go loop on two goroutines streams float32s
// from memory on this machine (sum of 512 MB, far beyond the caches). A
// direction step reads J twice, so its MB/s (J counted once) can reach at
// most half of this.
func BenchmarkMemoryRead(b *testing.B) {
	const n = 128 << 20 // float32s: 512 MB
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i & 1023)
	}
	b.SetBytes(4 * n)
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		const workers = 2
		sums := make(chan float32, workers)
		for w := 0; w < workers; w++ {
			part := x[w*n/workers : (w+1)*n/workers]
			go func() {
				var s0, s1, s2, s3 float32
				for i := 0; i+4 <= len(part); i += 4 {
					s0 += part[i]
					s1 += part[i+1]
					s2 += part[i+2]
					s3 += part[i+3]
				}
				sums <- s0 + s1 + s2 + s3
			}()
		}
		var s float32
		for w := 0; w < workers; w++ {
			s += <-sums
		}
		if s < 0 {
			b.Fatal("impossible sum")
		}
	}
}

// BenchmarkMemoryCopy is the second yardstick: the runtime's memmove
// copying 256 MB (SetBytes counts the bytes read; as many are written).
func BenchmarkMemoryCopy(b *testing.B) {
	const n = 64 << 20 // float32s: 256 MB
	src, dst := make([]float32, n), make([]float32, n)
	for i := range src {
		src[i] = float32(i)
	}
	b.SetBytes(4 * n)
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		copy(dst, src)
	}
}

// BenchmarkOutsideSpan measures what terms and drift add to a step: the
// pass that forms Extra = Σ c_s·∇t_s + c_d·2(θ − θ₀) (t terms, with drift)
// and the PNG direction with that Extra (m = 2, which then also reads
// Extra in its Gram pass and its v pass), beside the direction without.
func BenchmarkOutsideSpan(b *testing.B) {
	for _, n := range []int{1e4, 1e6} {
		J := benchJacobian(2, n)
		T := benchJacobian(1, n)
		theta, theta0 := T.Data, J.Row(0)
		extra, v := make([]float32, n), make([]float32, n)
		coef := []float64{1, 0.5}
		p := PNG{Settings{Gamma: 1e-9}}
		b.Run(fmt.Sprintf("extra/t=1+drift/n=%.0e", float64(n)), func(b *testing.B) {
			b.SetBytes(int64(4 * 3 * n))
			for i := 0; i < b.N; i++ {
				OutsideSpan(extra, T, []float64{0.3}, 0.01, theta, theta0)
			}
		})
		OutsideSpan(extra, T, []float64{0.3}, 0.01, theta, theta0)
		for _, tc := range []struct {
			name string
			g    Gradient
		}{{"direction/span", Gradient{Coef: coef}}, {"direction/extra", Gradient{Coef: coef, Extra: extra}}} {
			b.Run(fmt.Sprintf("%s/n=%.0e", tc.name, float64(n)), func(b *testing.B) {
				b.SetBytes(int64(4 * 2 * n))
				for i := 0; i < b.N; i++ {
					if _, err := p.Direction(v, J, tc.g, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMetricGram measures the metric's Gram pass (K = J diag(P) Jᵀ
// and J·prop) on one worker, in ns and CPU ns a weight, with the vector
// kernels (vec) and with the Go loops (go).
func BenchmarkMetricGram(b *testing.B) {
	for _, m := range []int{2, 3} {
		for _, n := range []int{1e6, 11_200_000} {
			c, _ := bigBoxCase(rand.New(rand.NewPCG(1, 1)), "adam", m, n)
			K, jp := make([]float64, m*m), make([]float64, m)
			for _, vec := range []bool{true, false} {
				name := map[bool]string{true: "vec", false: "go"}[vec]
				b.Run(fmt.Sprintf("m=%d/n=%.2g/%s", m, float64(n), name), func(b *testing.B) {
					withVec(vec, func() {
						b.ResetTimer()
						cpu := cpuNanos()
						for i := 0; i < b.N; i++ {
							metricGram(K, jp, c.J, c.metric, c.prop, 1)
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/weight")
						b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N)/float64(n), "cpu-ns/weight")
					})
				})
			}
		}
	}
}

// BenchmarkGramPass measures the Gram pass without a metric (K = J Jᵀ and
// J·extra, the PNG direction's) on one worker, in ns and CPU ns a weight:
// the one-pass kernels (vec), their Go loops (go) and the blocked Dsdot
// loop that more rows take (blocked).
func BenchmarkGramPass(b *testing.B) {
	for _, m := range []int{2, 3} {
		for _, n := range []int{1e6, 11_200_000} {
			rng := rand.New(rand.NewPCG(1, 1))
			J, extra := randJacobian(rng, m, n), randVec32(rng, n)
			K, je := make([]float64, m*m), make([]float64, m)
			for _, name := range []string{"vec", "go", "blocked"} {
				b.Run(fmt.Sprintf("m=%d/n=%.2g/%s", m, float64(n), name), func(b *testing.B) {
					withVec(name == "vec", func() {
						b.ResetTimer()
						cpu := cpuNanos()
						for i := 0; i < b.N; i++ {
							if name == "blocked" {
								clear(K)
								clear(je)
								gramRange(K, je, J, extra, 0, n, colBlock(m))
							} else {
								gramPass(K, je, J, extra, 1)
							}
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/weight")
						b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N)/float64(n), "cpu-ns/weight")
					})
				})
			}
		}
	}
}
