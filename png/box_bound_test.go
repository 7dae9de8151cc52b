package png

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// bigBoxCase returns an instance of Constrain's bounded problem with n
// weights, of one of the kinds that make the dual hard:
//   - adam: Adam's metric (P = 1/(√v̂+ε), v̂ over six decades), its step
//     inside a bound of about one, drifting against every task;
//   - heavy: TestConstrainBoundHeavyPull's pull at scale (tasks that
//     nearly cancel where the metric is huge);
//   - saturated: every coordinate of the proposal on the bound (Adam's
//     steady sign step), so that every weight starts on a breakpoint;
//   - decades: bound and metric over eight decades each, spreading the
//     breakpoints over every scale the dual passes through.
func bigBoxCase(rng *rand.Rand, kind string, m, n int) (metricCase, []float32) {
	J := NewJacobian(m, n)
	common := make([]float64, n)
	for k := range common {
		common[k] = rng.NormFloat64()
	}
	for i := 0; i < m; i++ {
		for k := 0; k < n; k++ {
			J.Row(i)[k] = float32(0.5*common[k] + rng.NormFloat64())
		}
	}
	prop, P, R := make([]float32, n), make([]float32, n), make([]float32, n)
	for k := 0; k < n; k++ {
		var dir float64 // the tasks' common direction at k
		for i := 0; i < m; i++ {
			dir += float64(J.Row(i)[k])
		}
		sgn := math.Copysign(1, dir)
		switch kind {
		case "adam":
			P[k] = float32(1 / (math.Pow(10, -3*rng.Float64()) + 1e-8))
			R[k] = float32(0.5 + rng.Float64())
			prop[k] = float32(-sgn * 0.9 * float64(R[k]) * rng.Float64())
		case "heavy":
			P[k], R[k], prop[k] = 0.05, 1.1, float32(-sgn)
			if k%10 == 0 {
				for i := 1; i < m; i++ {
					J.Row(i)[k] = -float32(0.7+0.2*float64(k/10%4)) * J.Row(0)[k]
				}
				P[k], prop[k] = 1e5, 0
			}
		case "saturated":
			P[k] = float32(math.Pow(10, 3*rng.Float64()))
			R[k] = float32(0.1 + rng.Float64())
			prop[k] = float32(-sgn) * R[k]
		case "decades":
			P[k] = float32(math.Pow(10, 8*rng.Float64()-4))
			R[k] = float32(math.Pow(10, 8*rng.Float64()-6))
			prop[k] = float32(-sgn*rng.Float64()) * R[k]
		default:
			panic(kind)
		}
	}
	return metricCase{fmt.Sprintf("%s/m=%d/n=%d", kind, m, n), J, prop, P}, R
}

var bigBoxKinds = []string{"adam", "heavy", "saturated", "decades"}

// TestConstrainPassBound holds the bounded Constrain to its bound on passes
// over the weights (constrainMaxPasses) on every hard kind, with enough
// weights that boxDual copies out only some of them (n > boxCompact(n)),
// and checks its answer: the bounded problem's KKT conditions
// (checkBoxed) where it reports an exact solve, and where it reports
// Inexact (out of rounds), an update within the bound meeting the rate it
// reports. The realistic kind (adam) must solve exactly.
func TestConstrainPassBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 1))
	inexact := 0
	for _, kind := range bigBoxKinds {
		for _, m := range []int{1, 2, 3, 5} {
			n := 200_000
			if testing.Short() {
				n = 20_000
			}
			c, R := bigBoxCase(rng, kind, m, n)
			for _, alpha := range []float64{0.5, 2} {
				p := PNG{Settings{Alpha: alpha, Workers: 2}}
				u := make([]float32, n)
				cnt := &boxCounter{}
				info, err := p.constrain(u, c.J, c.prop, c.metric, R, 1, cnt)
				if err != nil {
					t.Fatalf("%s α=%v: %v", c.name, alpha, err)
				}
				if cnt.passes > constrainMaxPasses {
					t.Errorf("%s α=%v: %d passes over the weights, bound %d", c.name, alpha, cnt.passes, constrainMaxPasses)
				}
				t.Logf("%s α=%v: %d passes, %d rounds, %d evals, work %.2fn, %d clipped, inexact %v", c.name, alpha, cnt.passes, cnt.rounds, cnt.evals, float64(cnt.work)/float64(n), info.Clipped, info.Inexact)
				if !info.Inexact {
					checkBoxed(t, c, u, R, info, alpha, 1)
					continue
				}
				inexact++
				if kind == "adam" {
					t.Errorf("%s α=%v: Adam's case out of rounds", c.name, alpha)
				}
				checkFeasible(t, c, u, R, info.Phi)
			}
		}
	}
	t.Logf("%d cases out of rounds (feasible fallback)", inexact)
}

// checkFeasible checks that u lies within ±R and gives every task the
// rate phi.
func checkFeasible(t *testing.T, c metricCase, u, R []float32, phi float64) {
	t.Helper()
	for k := range u {
		if math.Abs(float64(u[k])) > float64(R[k]) {
			t.Fatalf("%s: |u[%d]| = %v beyond the bound %v", c.name, k, u[k], R[k])
		}
	}
	dots, norms := jv(c.J, u)
	un := norm32(u)
	for i, d := range dots {
		if phi-d > vRelTol*norms[i]*un {
			t.Errorf("%s: ∇ℓ_%dᵀu = %.10g < φ_P = %.10g", c.name, i, d, phi)
		}
	}
}

// TestConstrainPassCount counts the passes on the easy paths: two without
// a bound, three with one the unbounded update stays within.
func TestConstrainPassCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	c, R := bigBoxCase(rng, "adam", 3, 10_000)
	loose := make([]float32, len(R))
	for k := range loose {
		loose[k] = float32(math.Inf(1))
	}
	for _, tc := range []struct {
		name string
		R    []float32
		want int
	}{{"no bound", nil, 2}, {"+Inf bound", loose, 3}} {
		cnt := &boxCounter{}
		u := make([]float32, c.J.N)
		if _, err := (PNG{Settings{Workers: 1}}).constrain(u, c.J, c.prop, c.metric, tc.R, 1, cnt); err != nil {
			t.Fatal(err)
		}
		if cnt.passes != tc.want {
			t.Errorf("%s: %d passes, want %d", tc.name, cnt.passes, tc.want)
		}
	}
}

// TestBoxDualMatchesReference runs the bounded solver and the unbounded
// one it replaced (refBoxDual: Newton steps with a backtracking search,
// each trial a pass) on the same duals, small and large, and compares the
// updates they make: the same to a relative 1e-6 wherever the reference
// ends without error.
func TestBoxDualMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 3))
	type inst struct {
		c metricCase
		R []float32
	}
	var insts []inst
	for _, c := range metricCases(31) {
		u0 := make([]float32, c.J.N)
		if _, err := (PNG{Settings{Alpha: 0.5}}).Constrain(u0, c.J, c.prop, c.metric, nil, 1); err != nil {
			t.Fatal(err)
		}
		for _, frac := range []float64{0.3, 0.05} {
			insts = append(insts, inst{c, boxFor(c.prop, u0, frac)})
		}
	}
	n := 60_000
	if testing.Short() {
		n = 12_000
	}
	for _, kind := range []string{"adam", "decades"} {
		for _, m := range []int{2, 3} {
			c, R := bigBoxCase(rng, kind, m, n)
			insts = append(insts, inst{c, R})
		}
	}
	compared := 0
	for _, in := range insts {
		c, R := in.c, in.R
		m := c.J.M
		K := metricGram64(c.J, c.metric)
		jp := make([]float64, m)
		for i := 0; i < m; i++ {
			for k, x := range c.J.Row(i) {
				jp[i] += float64(x) * float64(c.prop[k])
			}
		}
		_, g := MinNorm(K, m)
		phi := 0.5 * g
		lambda0, err := metricDual(K, jp, m, phi)
		if err != nil {
			t.Fatal(err)
		}
		if withinBound(c.J, lambda0, c.metric, c.prop, R, 2) {
			continue
		}
		want, _, werr := refBoxDual(c.J, lambda0, c.metric, c.prop, R, phi, 2)
		w := make([]float64, m)
		for i := range w {
			w[i] = 1 / math.Sqrt(K[i*m+i])
		}
		got, gerr := boxDual(c.J, lambda0, w, c.metric, c.prop, R, phi, 2, &boxCounter{}, newBoxScratch(c.J.N), nil)
		if werr != nil {
			if errors.Is(werr, ErrUnbounded) && gerr == nil && got.done {
				t.Errorf("%s: reference: %v; bounded solver found a minimiser %v", c.name, werr, got.lambda)
			}
			continue
		}
		if gerr != nil || !got.done {
			t.Errorf("%s: reference λ %v; bounded: %v (done %v, err %v)", c.name, want, got.lambda, got.done, gerr)
			continue
		}
		compared++
		uw, ug := make([]float32, c.J.N), make([]float32, c.J.N)
		boxCombine(uw, c.J, want, c.metric, c.prop, R, 0, nil, 0, 1)
		boxCombine(ug, c.J, got.lambda, c.metric, c.prop, R, 0, nil, 0, 1)
		scale := norm32(uw) / math.Sqrt(float64(len(uw)))
		worst := 0.0
		for k := range uw {
			worst = math.Max(worst, math.Abs(float64(uw[k]-ug[k]))/(math.Abs(float64(uw[k]))+scale))
		}
		if worst > 1e-6 {
			t.Errorf("%s: updates differ by %.3g (relative): λ %v vs reference %v", c.name, worst, got.lambda, want)
		}
	}
	t.Logf("%d of %d duals compared", compared, len(insts))
	if compared < len(insts)/3 {
		t.Errorf("only %d of %d duals compared", compared, len(insts))
	}
}

// BenchmarkConstrainBox measures Constrain with Adam's bound active (the
// adam kind of bigBoxCase) against the number of weights, up to the 11.2M
// of a ResNet-18 with two heads, reporting its passes over the weights.
func BenchmarkConstrainBox(b *testing.B) {
	for _, m := range []int{2, 3} {
		for _, n := range []int{1e5, 1e6, 11_200_000} {
			b.Run(fmt.Sprintf("m=%d/n=%.2g", m, float64(n)), func(b *testing.B) {
				if testing.Short() && n > 1e6 {
					b.Skip("n = 1.1e7 in short mode")
				}
				c, R := bigBoxCase(rand.New(rand.NewPCG(1, 1)), "adam", m, n)
				u := make([]float32, n)
				p := PNG{Settings{Alpha: 0.5}}
				var cnt boxCounter
				b.ResetTimer()
				cpu := cpuNanos()
				for i := 0; i < b.N; i++ {
					cnt = boxCounter{}
					info, err := p.constrain(u, c.J, c.prop, c.metric, R, 1, &cnt)
					if err != nil || info.Clipped == 0 {
						b.Fatalf("%v, %d clipped", err, info.Clipped)
					}
				}
				b.ReportMetric(float64(cnt.passes), "passes")
				b.ReportMetric(float64(cnt.rounds), "rounds")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/float64(cnt.passes), "ns/weight/pass")
				b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N)/float64(n)/float64(cnt.passes), "cpu-ns/weight/pass")
			})
		}
	}
}

var _ = slices.Max[[]float64]

// TestConstrainScratchBytes: what one Constrain call with the bound
// active allocates stays within ConstrainScratchBytes, which the training
// loop's memory plan counts, on every kind of the large cases.
func TestConstrainScratchBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 4M-weight cases")
	}
	const n = 1 << 22
	for _, kind := range []string{"adam", "heavy"} {
		for _, m := range []int{2, 3} {
			c, R := bigBoxCase(rand.New(rand.NewPCG(3, uint64(m))), kind, m, n)
			u := make([]float32, n)
			p := PNG{Settings{Alpha: 0.5, Workers: 2}}
			var cnt boxCounter
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			info, err := p.constrain(u, c.J, c.prop, c.metric, R, 1, &cnt)
			runtime.ReadMemStats(&after)
			if err != nil || info.Clipped == 0 || cnt.rounds == 0 {
				t.Fatalf("%s m=%d: %v, %d clipped, %d rounds: the bound did not bind", kind, m, err, info.Clipped, cnt.rounds)
			}
			got, limit := int64(after.TotalAlloc-before.TotalAlloc), ConstrainScratchBytes(m, n)
			if got > limit {
				t.Errorf("%s m=%d: Constrain allocated %d bytes, ConstrainScratchBytes says at most %d", kind, m, got, limit)
			}
			t.Logf("%s m=%d: %d rounds, allocated %.2f bytes a weight (bound %.2f)", kind, m, cnt.rounds, float64(got)/n, float64(limit)/n)
		}
	}
}

// BenchmarkBoxRound measures one round's pass of the bounded dual
// (boxRound: every weight's state and ρ bin, and its piece of h added to
// its bin) on 11.2M weights, the size of a ResNet-18 with two heads, for
// Adam's metric and bound (bigBoxCase's adam kind) and for metric and
// bound over eight decades (decades), on one worker and on all, with the
// vector kernels (vec) and with the Go loops (go).
func BenchmarkBoxRound(b *testing.B) {
	const n = 11_200_000
	if testing.Short() {
		b.Skip("n = 1.1e7 in short mode")
	}
	for _, m := range []int{2, 3} {
		for _, kind := range []string{"adam", "decades"} {
			c, R := bigBoxCase(rand.New(rand.NewPCG(1, 1)), kind, m, n)
			K := metricGram64(c.J, c.metric)
			w, lambda := make([]float64, m), make([]float64, m)
			for i := range w {
				w[i] = 1 / math.Sqrt(K[i*m+i])
				lambda[i] = w[i] * w[i]
			}
			sc := newBoxScratch(n)
			if kind == "adam" {
				// The floor: a sum of the vectors a round reads, one
				// worker.
				b.Run(fmt.Sprintf("m=%d/read", m), func(b *testing.B) {
					cpu := cpuNanos()
					var sum float64
					for i := 0; i < b.N; i++ {
						for k := 0; k < n; k++ {
							x := float64(c.prop[k]) + float64(c.metric[k]) + float64(R[k])
							for r := 0; r < m; r++ {
								x += float64(c.J.Data[r*n+k])
							}
							sum += x
						}
					}
					if math.IsNaN(sum) {
						b.Fatal("NaN")
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/weight")
					b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N)/n, "cpu-ns/weight")
				})
			}
			for _, workers := range []int{1, 0} {
				for _, vec := range []bool{true, false} {
					name := map[bool]string{true: "vec", false: "go"}[vec]
					b.Run(fmt.Sprintf("m=%d/%s/workers=%d/%s", m, kind, workers, name), func(b *testing.B) {
						withVec(vec, func() {
							b.ResetTimer()
							cpu := cpuNanos()
							for i := 0; i < b.N; i++ {
								boxRound(c.J, lambda, w, c.metric, c.prop, R, sc, workers, nil, lambda, nil)
							}
							b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/weight")
							b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N)/n, "cpu-ns/weight")
						})
					})
				}
			}
		}
	}
}

// TestConstrainSameBitsAnyWorkers: the bounded Constrain's update and
// what it reports are the same bits whatever the number of workers (its
// passes keep their partial sums per chunk of columns, not per worker),
// on a case with many chunks and the bound active.
func TestConstrainSameBitsAnyWorkers(t *testing.T) {
	n := 300_000
	if testing.Short() {
		n = 100_000
	}
	for _, kind := range []string{"adam", "decades"} {
		for _, m := range []int{2, 3} {
			c, R := bigBoxCase(rand.New(rand.NewPCG(9, uint64(m))), kind, m, n)
			var want []float32
			var wantInfo MetricInfo
			for _, workers := range []int{1, 2, 3, 8} {
				u := make([]float32, n)
				info, err := (PNG{Settings{Alpha: 0.5, Workers: workers}}).Constrain(u, c.J, c.prop, c.metric, R, 1)
				if err != nil {
					t.Fatalf("%s workers=%d: %v", c.name, workers, err)
				}
				if info.Clipped == 0 {
					t.Fatalf("%s: the bound did not bind", c.name)
				}
				if want == nil {
					want, wantInfo = u, info
					continue
				}
				if fmt.Sprint(info) != fmt.Sprint(wantInfo) {
					t.Errorf("%s: workers=%d reports %+v, workers=1 %+v", c.name, workers, info, wantInfo)
				}
				for k := range u {
					if math.Float32bits(u[k]) != math.Float32bits(want[k]) {
						t.Errorf("%s: workers=%d: u[%d] = %v, workers=1 %v", c.name, workers, k, u[k], want[k])
						break
					}
				}
			}
		}
	}
}

// TestConstrainNewtonWork holds all the work of a bounded Constrain call
// to its bound, the Newton steps' evaluations over the copied weights
// included, where n is above boxSmall (so that the bound scales with n)
// and the dual takes many rounds: metric and bound over eight decades
// each with a rate out of reach (α = 2), and every coordinate of the
// proposal on the bound (Adam's sign step, every weight on a
// breakpoint). Without the bound on the Newton work the rounds read up
// to a pass's worth of weights each, ten passes' worth in all on top of
// the counted passes.
func TestConstrainNewtonWork(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 1))
	n := 3 * boxSmall
	for _, kind := range []string{"decades", "saturated", "heavy", "vanishing"} {
		for _, m := range []int{2, 3} {
			var c metricCase
			var R []float32
			if kind == "vanishing" {
				// Adam's case with task 0's gradient at float32's
				// subnormal scale (a loss that has saturated): K_P,00
				// is 1e-80 of the others, which a Newton step damped
				// in λ's own units does not resolve.
				c, R = bigBoxCase(rng, "adam", m, n)
				for k, v := range c.J.Row(0) {
					c.J.Row(0)[k] = v * 1e-40
				}
				c.name = fmt.Sprintf("vanishing/m=%d/n=%d", m, n)
			} else {
				c, R = bigBoxCase(rng, kind, m, n)
			}
			for _, alpha := range []float64{0.5, 2} {
				p := PNG{Settings{Alpha: alpha, Workers: 2}}
				u := make([]float32, n)
				cnt := &boxCounter{}
				info, err := p.constrain(u, c.J, c.prop, c.metric, R, 1, cnt)
				if err != nil {
					t.Fatalf("%s α=%v: %v", c.name, alpha, err)
				}
				t.Logf("%s α=%v: %d passes, %d rounds, %d evaluations reading %.2f passes' worth, inexact %v",
					c.name, alpha, cnt.passes, cnt.rounds, cnt.evals, float64(cnt.work)/float64(n), info.Inexact)
				if cnt.passes > constrainMaxPasses {
					t.Errorf("%s α=%v: %d passes over the weights, bound %d", c.name, alpha, cnt.passes, constrainMaxPasses)
				}
				if cnt.work > boxNewtonWork(n) {
					t.Errorf("%s α=%v: the Newton steps read %d weights (%.2f passes' worth), bound %d",
						c.name, alpha, cnt.work, float64(cnt.work)/float64(n), boxNewtonWork(n))
				}
				if kind == "vanishing" && info.Inexact {
					t.Errorf("%s α=%v: out of rounds", c.name, alpha)
				}
				if info.Inexact {
					checkFeasible(t, c, u, R, info.Phi)
				} else {
					checkBoxed(t, c, u, R, info, alpha, 1)
				}
			}
		}
	}
}

// BenchmarkBoxEval measures one Newton step's evaluation over a round's
// copied weights (n/16 of n = 11.2M at random positions, Adam's metric
// and bound) on one worker, in ns and CPU ns per copied weight: over the
// values copied once a round (copied), and copying them a block at a time
// from their positions at every evaluation (blocks, the path of a round
// with more weights on a breakpoint than a round copies); copy is the
// round's copy of their values itself.
func BenchmarkBoxEval(b *testing.B) {
	n := 11_200_000
	for _, m := range []int{2, 3} {
		c, R := bigBoxCase(rand.New(rand.NewPCG(1, 1)), "adam", m, n)
		rng := rand.New(rand.NewPCG(2, 2))
		idx := make([]uint32, 0, n/16+n/64)
		for k := 0; k < n; k++ {
			if rng.IntN(16) == 0 {
				idx = append(idx, uint32(k))
			}
		}
		lam := make([]float64, m)
		for i := range lam {
			lam[i] = 0.03
		}
		for _, path := range []string{"copied", "blocks", "copy"} {
			b.Run(fmt.Sprintf("m=%d/%s", m, path), func(b *testing.B) {
				bm := &boxModel{m: m, q: newBoxQuad(m), idx: idx, J: c.J, P: c.metric, R: R, prop: c.prop, col: make([]float64, m), workers: 1}
				var cols boxCols
				cols.fill(c.J, c.metric, c.prop, R, idx)
				if path == "blocks" {
					bm.blocks = make([]boxCols, numChunks(len(idx)))
				} else {
					bm.cols = &cols
				}
				b.ResetTimer()
				cpu := cpuNanos()
				for i := 0; i < b.N; i++ {
					if path == "copy" {
						cols.fill(c.J, c.metric, c.prop, R, idx)
					} else {
						bm.eval(lam)
					}
				}
				k := float64(len(idx))
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/k, "ns/copied")
				b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N)/k, "cpu-ns/copied")
			})
		}
	}
}

// TestConstrainBlocksSameBits: a round that reads its copied weights
// block by block from their positions (where more than boxCompact(n) sit
// on a breakpoint) gives the bits of one that copies them once, the
// update and the report, for two, three and four tasks, in the Go loops;
// with the kernels, whose lanes are added per block there, λ to
// rounding.
func TestConstrainBlocksSameBits(t *testing.T) {
	defer func() { boxBlocksAlways = false }()
	n := 100_000
	for _, kind := range []string{"adam", "decades"} {
		for _, m := range []int{2, 3, 4} {
			c, R := bigBoxCase(rand.New(rand.NewPCG(19, uint64(m))), kind, m, n)
			for _, vec := range []bool{false, true} {
				var want []float32
				var wantInfo MetricInfo
				for _, blocks := range []bool{false, true} {
					boxBlocksAlways = blocks
					u := make([]float32, n)
					var cnt boxCounter
					var info MetricInfo
					var err error
					withVec(vec, func() {
						info, err = (PNG{Settings{Alpha: 0.5, Workers: 2}}).constrain(u, c.J, c.prop, c.metric, R, 1, &cnt)
					})
					if err != nil {
						t.Fatalf("%s vec=%v blocks=%v: %v", c.name, vec, blocks, err)
					}
					if cnt.evals == 0 {
						t.Fatalf("%s: no Newton step evaluated the copied weights", c.name)
					}
					if !blocks {
						want, wantInfo = u, info
						continue
					}
					if vec {
						for i, l := range info.Lambda {
							if w := wantInfo.Lambda[i]; math.Abs(l-w) > 1e-9*math.Abs(w) {
								t.Errorf("%s kernels: block by block λ = %v, copied once %v", c.name, info.Lambda, wantInfo.Lambda)
							}
						}
						continue
					}
					if fmt.Sprint(info) != fmt.Sprint(wantInfo) {
						t.Errorf("%s: block by block reports %+v, copied once %+v", c.name, info, wantInfo)
					}
					for k := range u {
						if math.Float32bits(u[k]) != math.Float32bits(want[k]) {
							t.Errorf("%s: block by block u[%d] = %v, copied once %v", c.name, k, u[k], want[k])
							break
						}
					}
				}
			}
		}
	}
}
