package backend

import (
	"math"
	"slices"
	"testing"

	"github.com/paretonav/paretonav/png"
)

// TestReusedTensorsMatchFresh checks that the step models' losses and
// Jacobian over three steps, with the float32 kernels returning the dead
// tensors that wrapped their pool buffers (graph.Value32, bufPool.getDense) and
// the concurrent passes' forks kept across steps, are those of the same
// steps with a fresh tensor for every value, bit for bit, and that the
// steps after the first do reuse tensors, those of the kernels package's
// kernels included (offered with their buffer, ops.Into, or swapped in by
// takeReuse).
func TestReusedTensorsMatchFresh(t *testing.T) {
	for _, sc := range stepCases {
		if sc.name != "lenet2" && sc.name != "mtan_small" {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			batch := sc.batch(4)
			run := func(reuse bool) ([][]float64, [][]float32, int64, int64) {
				md := openStepCaseWith(t, sc, execWith(func(o *execOptions) { o.reuseTensors = reuse }))
				m := len(sc.tasks)
				var ls [][]float64
				var js [][]float32
				var reused, opsReused int64
				for step := 0; step < 3; step++ {
					losses := make([]float64, m)
					jac := png.NewJacobian(m, md.NumParams())
					before, opsBefore := md.stats.reusedTensors.Load(), md.stats.opsTensorsReused.Load()
					if err := md.Evaluate(batch, losses, &jac); err != nil {
						t.Fatal(err)
					}
					if step == 2 {
						reused, opsReused = md.stats.reusedTensors.Load()-before, md.stats.opsTensorsReused.Load()-opsBefore
					}
					ls, js = append(ls, losses), append(js, jac.Data)
				}
				return ls, js, reused, opsReused
			}
			freshL, freshJ, none, _ := run(false)
			reL, reJ, reused, opsReused := run(true)
			if none != 0 {
				t.Errorf("reuseTensors off: %d tensors reused", none)
			}
			if reused == 0 || opsReused == 0 {
				t.Errorf("third step: %d tensors reused, %d of them made by the kernels package's kernels (takeReuse); want some of each", reused, opsReused)
			}
			for s := range freshL {
				for k := range freshL[s] {
					if math.Float64bits(freshL[s][k]) != math.Float64bits(reL[s][k]) {
						t.Errorf("step %d loss %d: %v with reuse, %v fresh", s, k, reL[s][k], freshL[s][k])
					}
				}
				for i := range freshJ[s] {
					if math.Float32bits(freshJ[s][i]) != math.Float32bits(reJ[s][i]) {
						t.Fatalf("step %d J[%d]: %v with reuse, %v fresh", s, i, reJ[s][i], freshJ[s][i])
					}
				}
			}
		})
	}
}

// TestBoundParamsKept checks, on every stepCase, that a step after the
// first leaves every float32 parameter bound to the tensor of the step
// before (bindParam), and that with θ changed in between (SetParams) its
// losses and J are those of a fresh model given the same θ, bit for bit.
func TestBoundParamsKept(t *testing.T) {
	for _, sc := range stepCases {
		t.Run(sc.name, func(t *testing.T) {
			md, ref := openStepCase(t, sc), openStepCase(t, sc)
			m, n := len(sc.tasks), md.NumParams()
			eval := func(md *Model) ([]float64, []float32) {
				losses := make([]float64, m)
				jac := png.NewJacobian(m, n)
				if err := md.Evaluate(sc.batch(4), losses, &jac); err != nil {
					t.Fatal(err)
				}
				return losses, jac.Data
			}
			eval(md)
			theta := make([]float32, n)
			md.Params(theta)
			for i := range theta {
				theta[i] *= 0.9
			}
			if err := md.SetParams(theta); err != nil {
				t.Fatal(err)
			}
			if err := ref.SetParams(theta); err != nil {
				t.Fatal(err)
			}
			before := md.stats.boundParamsKept.Load()
			l1, j1 := eval(md)
			if kept := md.stats.boundParamsKept.Load() - before; kept != int64(len(md.params)) {
				t.Errorf("second step kept %d of %d parameters bound", kept, len(md.params))
			}
			l0, j0 := eval(ref)
			if !slices.Equal(l1, l0) || !slices.Equal(j1, j0) {
				t.Error("losses or J after SetParams differ from a fresh model's with the same θ")
			}
		})
	}
}
