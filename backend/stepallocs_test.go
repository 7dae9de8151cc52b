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
// counts with that reuse (lenet2: 191 objects per step, mtan_small: 1560
// when the test runs alone; 217 and 2179 after the package's other tests,
// whose models leave the kernels' scratch pools holding other sizes) and
// below those of a step that made a tensor per value (411 and 3818).
func TestStepAllocations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch int
		max   float64
	}{
		{"lenet2", 4, 300},
		{"mtan_small", 2, 2700},
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
			// The fewest of three rounds: a collection during a round
			// empties the caches that reuse the step's tensors and scratch
			// (wrap's weak cache, sync.Pools), and their refill, a few
			// hundred objects, is not what a step allocates.
			got := testing.AllocsPerRun(5, step)
			for range 2 {
				got = min(got, testing.AllocsPerRun(5, step))
			}
			t.Logf("%s: %.0f heap objects per step", tc.name, got)
			if got > tc.max {
				t.Errorf("%s: a step allocated %.0f heap objects, want at most %.0f", tc.name, got, tc.max)
			}
		})
	}
}
