package backend

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
)

// TestConcurrentPassesMatchSequential checks that the backward passes run
// side by side (the step models' default: their passes' values are small)
// give the losses and Jacobian of the passes run one after another
// (concurrentPassMaxBytes −1) bit for bit, over two steps (the second
// reusing the pool's buffers), and that the plan counts the concurrent
// passes' values in the planned peak. Run under -race, it also checks
// that concurrent passes share no mutable state.
func TestConcurrentPassesMatchSequential(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS ≥ 2 for concurrent passes")
	}
	for _, sc := range stepCases {
		t.Run(sc.name, func(t *testing.T) {
			m := len(sc.tasks)
			batch := sc.batch(4)
			run := func(limit int64) ([]float64, []float32, *program) {
				return twoSteps(t, sc, batch, execWith(func(o *execOptions) { o.concurrentPassMaxBytes = limit }))
			}
			seqL, seqJ, seqP := run(-1)
			conL, conJ, conP := run(defaultExec().concurrentPassMaxBytes)
			if seqP.plan.conc != 1 {
				t.Fatalf("concurrentPassMaxBytes −1: %d passes at once, want 1", seqP.plan.conc)
			}
			if want := min(m, runtime.GOMAXPROCS(0)); conP.plan.conc != want {
				t.Fatalf("default concurrentPassMaxBytes: %d passes at once, want %d (this model's passes are small)", conP.plan.conc, want)
			}
			rise := conP.plan.passRise(conP.plan.bytes)
			if d := conP.plan.peak(conP) - seqP.plan.peak(seqP); rise <= 0 || d != int64(conP.plan.conc-1)*rise {
				t.Errorf("planned peak grew by %d bytes with %d passes at once, want %d·%d", d, conP.plan.conc, conP.plan.conc-1, rise)
			}
			for k := range seqL {
				if math.Float64bits(seqL[k]) != math.Float64bits(conL[k]) {
					t.Errorf("loss %d: concurrent %v, sequential %v", k, conL[k], seqL[k])
				}
			}
			for i := range seqJ {
				if math.Float32bits(seqJ[i]) != math.Float32bits(conJ[i]) {
					t.Fatalf("J[%d] (task %d): concurrent %v, sequential %v", i, i/(len(seqJ)/m), conJ[i], seqJ[i])
				}
			}
		})
	}
}

// TestFuseBatchNormRelu checks that the MTANs' BatchNorm → Relu pairs run
// fused (some pairs found), their gradients too (fusegrad.go: at least
// one fused run per pair), and give the losses and Jacobian of the ops run
// apart, bit for bit, with the backward passes recomputing the
// forward values (rematMinBytes 0: the fused pair runs again inside each
// pass) and keeping them.
func TestFuseBatchNormRelu(t *testing.T) {
	for _, sc := range stepCases {
		if !strings.HasPrefix(sc.name, "mtan") {
			continue
		}
		for _, remat := range []int64{0, defaultExec().rematMinBytes} {
			t.Run(fmt.Sprintf("%s/remat%d", sc.name, remat), func(t *testing.T) {
				batch := sc.batch(3)
				run := func(fuse bool) ([]float64, []float32, int, int64) {
					losses, jac, p := twoSteps(t, sc, batch, execWith(func(o *execOptions) { o.rematMinBytes, o.fuseBatchNormRelu = remat, fuse }))
					fused := 0
					for _, f := range p.fusedBN {
						if f {
							fused++
						}
					}
					return losses, jac, fused, p.stats.fusedGradRuns.Load()
				}
				l0, j0, n0, g0 := run(false)
				l1, j1, n1, g1 := run(true)
				if n0 != 0 || n1 == 0 {
					t.Fatalf("fused BatchNorm → Relu pairs: %d off, %d on; want 0 and some", n0, n1)
				}
				if g0 != 0 || g1 < int64(n1) {
					t.Fatalf("fused Relu → BatchNorm gradients run: %d off, %d on; want 0 and at least one per pair (%d)", g0, g1, n1)
				}
				for k := range l0 {
					if math.Float64bits(l0[k]) != math.Float64bits(l1[k]) {
						t.Errorf("loss %d: fused %v, apart %v", k, l1[k], l0[k])
					}
				}
				for i := range j0 {
					if math.Float32bits(j0[i]) != math.Float32bits(j1[i]) {
						t.Fatalf("J[%d]: fused %v, apart %v", i, j1[i], j0[i])
					}
				}
			})
		}
	}
}

// twoSteps opens sc's model with options opt, runs two Evaluate steps with
// a Jacobian on batch (the second reusing the compiled program and the
// pool's buffers), and returns the losses, the Jacobian and the program.
func twoSteps(t *testing.T, sc stepCase, batch map[string]*importer.Tensor, opt Options) ([]float64, []float32, *program) {
	t.Helper()
	m := len(sc.tasks)
	md := openStepCaseWith(t, sc, opt)
	losses := make([]float64, m)
	jac := png.NewJacobian(m, md.NumParams())
	for step := 0; step < 2; step++ {
		if err := md.Evaluate(batch, losses, &jac); err != nil {
			t.Fatal(err)
		}
	}
	var p *program
	for _, c := range md.cache {
		if c.prog != nil {
			p = c.prog
		}
	}
	return losses, jac.Data, p
}
