package backend

import (
	"runtime/debug"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/paretonav/paretonav/png"
)

// TestGradsIntoJacobian checks that parameter gradients written straight
// into the Jacobian's rows (execOptions.gradsIntoJacobian) give the
// copying path's losses and J (see sameSteps).
func TestGradsIntoJacobian(t *testing.T) {
	sameSteps(t, func(o *execOptions, on bool) { o.gradsIntoJacobian = on },
		func(s *execStats) *atomic.Int64 { return &s.sunkGrads }, "gradient written into the Jacobian")
}

// TestSumInPlace checks that gradient sums written over an operand that
// dies with them (execOptions.sumInPlace) give the losses and J of sums
// into fresh buffers (see sameSteps). Sums with a zero operand take the
// other one (skipZeroSums) before they could be written in place; they are
// added here, so that the test cases' sums reach the in-place path.
func TestSumInPlace(t *testing.T) {
	sameSteps(t, func(o *execOptions, on bool) { o.skipZeroSums, o.sumInPlace = false, on },
		func(s *execStats) *atomic.Int64 { return &s.inPlaceSums }, "gradient sum written in place")
}

// sameSteps checks, on every stepCase (or those named in only), that the
// steps with an executor option on (set(md.run, true)) give the losses and
// J of the steps with it off, bit for bit, over two steps each way (pool
// buffers reused); that the option was used (the count used picks from
// the model's stats grew); and that a finished J is left alone by the
// steps after it, one of another batch size included (no memory of it went
// to the pool).
func sameSteps(t *testing.T, set func(o *execOptions, on bool), used func(s *execStats) *atomic.Int64, what string, only ...string) {
	for _, sc := range stepCases {
		if len(only) > 0 && !slices.Contains(only, sc.name) {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			md := openStepCase(t, sc)
			m := len(sc.tasks)
			step := func(on bool, n int) ([]float64, png.Jacobian) {
				set(md.run, on)
				losses := make([]float64, m)
				jac := png.NewJacobian(m, md.NumParams())
				if err := md.Evaluate(sc.batch(n), losses, &jac); err != nil {
					t.Fatal(err)
				}
				return losses, jac
			}
			l0, j0 := step(false, 4)
			before := used(md.stats).Load()
			l1, j1 := step(true, 4)
			if used(md.stats).Load() == before {
				t.Errorf("no %s", what)
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
					t.Errorf("step %d differs from the steps with the option off", i+1)
				}
			}
			if !slices.Equal(j1.Data, kept) {
				t.Error("a finished Jacobian changed in later steps")
			}
		})
	}
}

// TestCopyInPlace checks that plain copies (Reshape, Flatten and their
// gradients) taking over the buffer of a value that dies with them
// (execOptions.copyInPlace) give the losses and J of copies into fresh buffers (see
// sameSteps) on LeNet, whose Flatten does (the MTANs have no Reshape; the
// torch fixtures' parity tests run with the option on).
func TestCopyInPlace(t *testing.T) {
	sameSteps(t, func(o *execOptions, on bool) { o.copyInPlace = on },
		func(s *execStats) *atomic.Int64 { return &s.copiesTaken }, "plain copy taking over its operand's buffer", "lenet2")
}

// TestSkipZeroSums checks that gradient sums with a zero operand (another
// task's contribution) taking the other operand (execOptions.skipZeroSums) give the
// losses and J of the additions (see sameSteps).
func TestSkipZeroSums(t *testing.T) {
	sameSteps(t, func(o *execOptions, on bool) { o.skipZeroSums = on },
		func(s *execStats) *atomic.Int64 { return &s.zeroSums }, "gradient sum with a zero operand")
}

// TestPoolInts checks that int64 values living in pool buffers (execOptions.poolInts:
// MaxPool's indices, which the small MTAN's MaxUnpool reads) give the
// losses and J of fresh ones (see sameSteps), on the step cases that have
// int64 values.
func TestPoolInts(t *testing.T) {
	var withInts []string
	for _, sc := range stepCases {
		if !sc.noIntValues {
			withInts = append(withInts, sc.name)
		}
	}
	sameSteps(t, func(o *execOptions, on bool) { o.poolInts = on },
		func(s *execStats) *atomic.Int64 { return &s.pooledInts }, "int64 value in a pool buffer", withInts...)
}

// TestPoolIntKernels checks that the small MTAN's integer kernels (the
// moves and arithmetic of its unpooling indices) write into pool buffers
// with execOptions.poolInts, and that its losses and J are those of fresh buffers, bit
// for bit, over steps that reuse the buffers.
func TestPoolIntKernels(t *testing.T) {
	for _, sc := range stepCases {
		if sc.name != "mtan_small" {
			continue
		}
		md := openStepCase(t, sc)
		m := len(sc.tasks)
		step := func(on bool) ([]float64, []float32) {
			md.run.poolInts = on
			losses := make([]float64, m)
			jac := png.NewJacobian(m, md.NumParams())
			if err := md.Evaluate(sc.batch(4), losses, &jac); err != nil {
				t.Fatal(err)
			}
			return losses, jac.Data
		}
		l0, j0 := step(false)
		before := md.stats.pooledIntKernels.Load()
		l1, j1 := step(true)
		l2, j2 := step(true)
		if md.stats.pooledIntKernels.Load() == before {
			t.Error("no integer kernel wrote into a pool buffer")
		}
		for i, s := range [][]float64{l1, l2} {
			if !slices.Equal(s, l0) {
				t.Errorf("step %d: losses %v, %v with fresh buffers", i+1, s, l0)
			}
		}
		if !slices.Equal(j1, j0) || !slices.Equal(j2, j0) {
			t.Error("J differs from the step with fresh buffers")
		}
	}
}

// TestSinkTensorsReused checks, on every stepCase, that steps into the
// same Jacobian make no new tensor for the gradients the backend's kernels
// write into its rows after the first (every such gradient of the third
// step reuses the tensor of the second, sinkWrap), and that their losses
// and J are those of steps into a fresh Jacobian each, bit for bit
// (garbage collection off: see sinkWrap).
func TestSinkTensorsReused(t *testing.T) {
	// sinkWrap's pointers are weak: a collection between two steps drops
	// the tensors (the next step wraps the rows again), which would make
	// the count below depend on the collector's timing.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var total int64 // gradients offered their tensor in third steps, all cases
	for _, sc := range stepCases {
		t.Run(sc.name, func(t *testing.T) {
			md, ref := openStepCase(t, sc), openStepCase(t, sc) // ref: a fresh Jacobian each step
			m := len(sc.tasks)
			same := png.NewJacobian(m, md.NumParams())
			for step := 0; step < 3; step++ {
				losses := make([]float64, m)
				fresh := png.NewJacobian(m, md.NumParams())
				if err := ref.Evaluate(sc.batch(4), losses, &fresh); err != nil {
					t.Fatal(err)
				}
				offered, reused := md.stats.sinkTensorsOffered.Load(), md.stats.sinkTensorsReused.Load()
				again := make([]float64, m)
				if err := md.Evaluate(sc.batch(4), again, &same); err != nil {
					t.Fatal(err)
				}
				offered, reused = md.stats.sinkTensorsOffered.Load()-offered, md.stats.sinkTensorsReused.Load()-reused
				if step == 2 {
					total += offered
				}
				if step == 2 && reused != offered {
					t.Errorf("third step into the same Jacobian: %d gradients of the backend's kernels written into it, %d of them reused their tensor", offered, reused)
				}
				if !slices.Equal(losses, again) || !slices.Equal(fresh.Data, same.Data) {
					t.Errorf("step %d: losses or J into the same Jacobian differ from those into a fresh one", step)
				}
			}
		})
	}
	if total == 0 {
		t.Error("no case has a gradient of the backend's kernels written into the Jacobian")
	}
}
