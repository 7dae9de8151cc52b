package backend

import (
	"testing"

	"github.com/paretonav/paretonav/png"
)

// TestStepAllocations checks that a steady-state step (Evaluate with a
// Jacobian, after two warm-up steps) allocates at most a bound of heap
// objects. Each object the step allocates the garbage collector must find
// and free; the values' buffers come from the pool and the tensors
// wrapping them are reused (value32, ops.Into), so what remains is a few
// closures and slices per kernel. The bounds are a margin above the
// counts with that reuse (lenet2: 192 objects per step, mtan_small: 1565;
// a collection during the runs makes the cached tensors again) and below
// those of a step that made a tensor per value (411 and 3818).
func TestStepAllocations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch int
		max   float64
	}{
		{"lenet2", 4, 240},
		{"mtan_small", 2, 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sc stepCase
			for _, c := range stepCases {
				if c.name == tc.name {
					sc = c
				}
			}
			if sc.name == "" {
				t.Fatalf("no step case %s", tc.name)
			}
			md := openStepCase(t, sc)
			batch := sc.batch(tc.batch)
			losses := make([]float64, len(sc.tasks))
			jac := png.NewJacobian(len(sc.tasks), md.NumParams())
			step := func() {
				if err := md.Evaluate(batch, losses, &jac); err != nil {
					t.Fatal(err)
				}
			}
			step()
			step()
			got := testing.AllocsPerRun(10, step)
			t.Logf("%s: %.0f heap objects per step", tc.name, got)
			if got > tc.max {
				t.Errorf("%s: a step allocated %.0f heap objects, want at most %.0f", tc.name, got, tc.max)
			}
		})
	}
}
