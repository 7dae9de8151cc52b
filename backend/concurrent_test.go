package backend

import (
	"math"
	"runtime"
	"testing"

	"github.com/paretonav/paretonav/png"
)

// TestConcurrentPassesMatchSequential checks that the backward passes run
// side by side (the step models' default: their passes' values are small)
// give the losses and Jacobian of the passes run one after another
// (ConcurrentPassMaxBytes −1) bit for bit, over two steps (the second
// reusing the pool's buffers), and that the plan counts the concurrent
// passes' values in the planned peak. Run under -race, it also checks
// that concurrent passes share no mutable state.
func TestConcurrentPassesMatchSequential(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS ≥ 2 for concurrent passes")
	}
	saved := ConcurrentPassMaxBytes
	defer func() { ConcurrentPassMaxBytes = saved }()
	for _, sc := range stepCases {
		t.Run(sc.name, func(t *testing.T) {
			m := len(sc.tasks)
			batch := sc.batch(4)
			run := func(limit int64) ([]float64, []float32, *program) {
				ConcurrentPassMaxBytes = limit
				md := openStepCase(t, sc)
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
			seqL, seqJ, seqP := run(-1)
			conL, conJ, conP := run(saved)
			if seqP.plan.conc != 1 {
				t.Fatalf("ConcurrentPassMaxBytes −1: %d passes at once, want 1", seqP.plan.conc)
			}
			if want := min(m, runtime.GOMAXPROCS(0)); conP.plan.conc != want {
				t.Fatalf("default ConcurrentPassMaxBytes: %d passes at once, want %d (this model's passes are small)", conP.plan.conc, want)
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
