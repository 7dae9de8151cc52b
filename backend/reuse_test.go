package backend

import (
	"math"
	"testing"

	"github.com/paretonav/paretonav/png"
)

// TestReusedTensorsMatchFresh checks that the step models' losses and
// Jacobian over three steps, with the float32 kernels returning the dead
// tensors that wrapped their pool buffers (value32, bufPool.getDense) and
// the concurrent passes' forks kept across steps, are those of the same
// steps with a fresh tensor for every value, bit for bit, and that the
// steps after the first do reuse tensors.
func TestReusedTensorsMatchFresh(t *testing.T) {
	saved := ReuseTensors
	defer func() { ReuseTensors = saved }()
	for _, sc := range stepCases {
		if sc.name != "lenet2" && sc.name != "mtan_small" {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			batch := sc.batch(4)
			run := func(reuse bool) ([][]float64, [][]float32, int64) {
				ReuseTensors = reuse
				md := openStepCase(t, sc)
				m := len(sc.tasks)
				var ls [][]float64
				var js [][]float32
				var reused int64
				for step := 0; step < 3; step++ {
					losses := make([]float64, m)
					jac := png.NewJacobian(m, md.NumParams())
					before := reusedTensors.Load()
					if err := md.Evaluate(batch, losses, &jac); err != nil {
						t.Fatal(err)
					}
					if step == 2 {
						reused = reusedTensors.Load() - before
					}
					ls, js = append(ls, losses), append(js, jac.Data)
				}
				return ls, js, reused
			}
			freshL, freshJ, none := run(false)
			reL, reJ, reused := run(true)
			if none != 0 {
				t.Errorf("ReuseTensors off: %d tensors reused", none)
			}
			if reused == 0 {
				t.Error("no tensor reused in the third step")
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
