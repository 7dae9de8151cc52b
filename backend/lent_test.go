package backend

import (
	"math"
	"testing"

	"github.com/paretonav/paretonav/png"
)

// TestLentSlabsMatchUncarved runs a loop like finetune's on step models
// whose lent vectors hold all of a step's values (lenet2) or part of them
// (the MTANs: the rest in ordinary buffers): each step evaluates, borrows
// four θ-sized vectors (Lend), computes an update through them, writes
// NaN over them and gives them back (TakeBack). Its losses and Jacobians
// over the steps are those of the same loop with the pool's carving off,
// bit for bit: no value's buffer is shared with another live value or
// with a lent vector. On mtan_w8, whose four lent vectors do not fit in the
// pool's limit beside the step's values, the loop without carving makes
// buffers of at least a vector's size again every step (the lent vectors,
// and the values dropped for them); with carving, the steps after the
// first make less than one vector's size in all.
func TestLentSlabsMatchUncarved(t *testing.T) {
	for _, tc := range []struct {
		name  string
		churn bool // the lent vectors crowd the step's values out of the pool's limit
	}{{"lenet2", false}, {"mtan_small", false}, {"mtan_w8", true}} {
		var sc stepCase
		for _, c := range stepCases {
			if c.name == tc.name {
				sc = c
			}
		}
		name := tc.name
		t.Run(name, func(t *testing.T) {
			batch := sc.batch(4)
			const steps = 6
			run := func(carve bool) ([][]float64, [][]float32, []int64) {
				md := openStepCase(t, sc)
				md.bufPool().noCarve = !carve
				m, n := len(sc.tasks), md.NumParams()
				var ls [][]float64
				var js [][]float32
				var made []int64
				for step := 0; step < steps; step++ {
					before := md.bufPool().made
					losses := make([]float64, m)
					jac := png.NewJacobian(m, n)
					if err := md.Evaluate(batch, losses, &jac); err != nil {
						t.Fatal(err)
					}
					ls, js = append(ls, losses), append(js, jac.Data)
					var lent [4][]float32
					for k := range lent {
						lent[k] = md.Lend(n)
					}
					// direction, proposal, metric, bound: the update
					// reads all four.
					for i := 0; i < n; i++ {
						var g float32
						for k := 0; k < m; k++ {
							g += jac.Data[k*n+i]
						}
						lent[0][i] = g
						lent[2][i] = 1 + g*g
						lent[3][i] = 1e-3
						lent[1][i] = md.theta[i] - max(-lent[3][i], min(lent[3][i], 1e-2*lent[0][i]/lent[2][i]))
					}
					if err := md.SetParams(lent[1]); err != nil {
						t.Fatal(err)
					}
					for k := range lent {
						for i := range lent[k] {
							lent[k][i] = float32(math.NaN())
						}
						md.TakeBack(lent[k])
					}
					made = append(made, md.bufPool().made-before)
				}
				return ls, js, made
			}
			wantL, wantJ, madeOff := run(false)
			n := int64(openStepCase(t, sc).NumParams())
			gotL, gotJ, made := run(true)
			t.Logf("%s: elements of new buffers per step: %v carving, %v not", name, made, madeOff)
			for s := range wantL {
				for k := range wantL[s] {
					if math.Float64bits(gotL[s][k]) != math.Float64bits(wantL[s][k]) {
						t.Errorf("step %d loss %d: %v carving, %v not", s, k, gotL[s][k], wantL[s][k])
					}
				}
				for i := range wantJ[s] {
					if math.Float32bits(gotJ[s][i]) != math.Float32bits(wantJ[s][i]) {
						t.Fatalf("step %d J[%d]: %v carving, %v not", s, i, gotJ[s][i], wantJ[s][i])
					}
				}
			}
			if !tc.churn {
				return
			}
			var after, afterOff int64
			for s := 1; s < steps; s++ {
				after, afterOff = after+made[s], afterOff+madeOff[s]
			}
			if afterOff < int64(steps-1)*n {
				t.Errorf("without carving the steps after the first made buffers of %d elements, expected at least a vector's %d a step: the case does not test what it should", afterOff, n)
			}
			if after >= n {
				t.Errorf("the steps after the first made buffers of %d elements, want less than a vector's %d", after, n)
			}
		})
	}
}
