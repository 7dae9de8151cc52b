package backend

import (
	"slices"
	"testing"

	"github.com/paretonav/paretonav/png"
)

// TestGradsIntoJacobian checks that parameter gradients written straight
// into the Jacobian's rows (GradsIntoJacobian) give the losses and J of
// the copying path bit for bit, over two steps each (pool buffers reused),
// that some gradients were written in place, and that a finished J is
// left alone by the steps after it (no row memory went to the pool).
func TestGradsIntoJacobian(t *testing.T) {
	defer func(v bool) { GradsIntoJacobian = v }(GradsIntoJacobian)
	for _, sc := range stepCases {
		t.Run(sc.name, func(t *testing.T) {
			md := openStepCase(t, sc)
			m := len(sc.tasks)
			step := func(into bool, n int) ([]float64, png.Jacobian) {
				GradsIntoJacobian = into
				losses := make([]float64, m)
				jac := png.NewJacobian(m, md.NumParams())
				if err := md.Evaluate(sc.batch(n), losses, &jac); err != nil {
					t.Fatal(err)
				}
				return losses, jac
			}
			l0, j0 := step(false, 4)
			before := sunkGrads.Load()
			l1, j1 := step(true, 4)
			if sunkGrads.Load() == before {
				t.Error("no gradient was written into the Jacobian")
			}
			kept := slices.Clone(j1.Data)
			l2, j2 := step(true, 4)
			l3, j3 := step(false, 4)
			step(true, 2)
			for i, s := range []struct {
				l []float64
				j png.Jacobian
			}{{l1, j1}, {l2, j2}, {l3, j3}} {
				if !slices.Equal(s.l, l0) || !slices.Equal(s.j.Data, j0.Data) {
					t.Errorf("step %d differs from the copying path's", i+1)
				}
			}
			if !slices.Equal(j1.Data, kept) {
				t.Error("a finished Jacobian changed in later steps")
			}
		})
	}
}
