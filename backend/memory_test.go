package backend

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
)

// TestEstimateMemory checks the planned step memory: the estimate from a
// batch equals the one from its size, the activations grow linearly with
// the batch (the parameters' gradients are a fixed part), the fixed parts
// are counted from the parameter count, and an Evaluate allocates no more
// than twice the estimate.
func TestEstimateMemory(t *testing.T) {
	for _, sc := range stepCases {
		t.Run(sc.name, func(t *testing.T) {
			md := openStepCase(t, sc)
			e1, err := md.EstimateMemoryBatch(1)
			if err != nil {
				t.Fatal(err)
			}
			e4, err := md.EstimateMemoryBatch(4)
			if err != nil {
				t.Fatal(err)
			}
			eb, err := md.EstimateMemory(sc.batch(4))
			if err != nil {
				t.Fatal(err)
			}
			if eb != e4 {
				t.Errorf("EstimateMemory(batch of 4) = %+v, EstimateMemoryBatch(4) = %+v", eb, e4)
			}
			e2, err := md.EstimateMemoryBatch(2)
			if err != nil {
				t.Fatal(err)
			}
			if r := float64(e4.Values-e1.Values) / float64(e2.Values-e1.Values); r < 2.5 || r > 3.5 {
				t.Errorf("activations: batch 1, 2, 4: %d, %d, %d bytes: growth from 1 to 4 is %.2f times that from 1 to 2, expected about 3",
					e1.Values, e2.Values, e4.Values, r)
			}
			n := int64(md.NumParams())
			// the model file's float32 values and θ
			if e4.Weights != 2*4*n || e4.Jacobian != int64(len(sc.tasks))*4*n {
				t.Errorf("weights %d, J %d bytes for %d parameters and %d tasks", e4.Weights, e4.Jacobian, n, len(sc.tasks))
			}
			if !strings.Contains(e4.String(), "activations and gradients") {
				t.Errorf("String() = %q", e4.String())
			}
			jac := png.NewJacobian(len(sc.tasks), md.NumParams())
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			if err := md.Evaluate(sc.batch(4), make([]float64, len(sc.tasks)), &jac); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			if grown := int64(after.TotalAlloc - before.TotalAlloc); grown > 2*e4.Total() {
				t.Errorf("an Evaluate allocated %d bytes, twice the estimate %d is the most expected", grown, e4.Total())
			}
		})
	}
}

// TestEstimateMemoryBatchErrors checks the errors for models the batch
// size alone does not shape.
func TestEstimateMemoryBatchErrors(t *testing.T) {
	sc := stepCases[0]
	md, err := Open(sc.model(t), mustTasks(t, sc.tasks...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := md.EstimateMemoryBatch(0); err == nil || !strings.Contains(err.Error(), "batch 0") {
		t.Errorf("batch 0: error %v, expected one naming the batch", err)
	}
	out, err := Open(sc.model(t), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.EstimateMemoryBatch(2); err == nil || !strings.Contains(err.Error(), "no tasks") {
		t.Errorf("no tasks: error %v", err)
	}
}

// TestParametersHeldOnce checks what MemoryEstimate.Weights counts: the decoded
// float32 initializers of the trainable parameters and the parameter
// nodes of every graph the model builds (Open's trial build, the
// estimate's, Evaluate's) are views of θ, not copies.
func TestParametersHeldOnce(t *testing.T) {
	for _, sc := range stepCases {
		t.Run(sc.name, func(t *testing.T) {
			md := openStepCase(t, sc)
			if _, err := md.EstimateMemoryBatch(4); err != nil {
				t.Fatal(err)
			}
			jac := png.NewJacobian(len(sc.tasks), md.NumParams())
			if err := md.Evaluate(sc.batch(4), make([]float64, len(sc.tasks)), &jac); err != nil {
				t.Fatal(err)
			}
			if len(md.cache) < 2 {
				t.Fatalf("%d graphs built, expected at least the trial build and the step's", len(md.cache))
			}
			onTheta := func(d []float32, p Param) bool {
				return len(d) == shape.Numel(p.Shape) && &d[0] == &md.theta[p.Offset]
			}
			for _, p := range md.params {
				if d := md.inits[p.Name].F32; !onTheta(d, p) {
					t.Errorf("decoded initializer %q is not a view of θ", p.Name)
				}
				for key, c := range md.cache {
					n := c.bt.Params[p.Name]
					d, _ := n.Value().Data().([]float32)
					if len(p.Shape) > 0 && !onTheta(d, p) {
						t.Errorf("graph %q: parameter node %q holds a copy of the parameter", key, p.Name)
					}
				}
			}
		})
	}
}

// TestReleaseBuffers checks that ReleaseBuffers empties the pool a step
// leaves behind and that the next step, allocating afresh, computes the
// same losses and gradients bit for bit.
func TestReleaseBuffers(t *testing.T) {
	sc := stepCases[1]
	md, err := Open(sc.model(t), mustTasks(t, sc.tasks...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := len(sc.tasks)
	l1, l2 := make([]float64, m), make([]float64, m)
	j1, j2 := png.NewJacobian(m, md.NumParams()), png.NewJacobian(m, md.NumParams())
	if err := md.Evaluate(sc.batch(4), l1, &j1); err != nil {
		t.Fatal(err)
	}
	if md.pool == nil || md.pool.nfree == 0 {
		t.Fatal("no pooled buffers after a step")
	}
	md.ReleaseBuffers()
	if md.pool.nfree != 0 {
		t.Errorf("%d buffers pooled after ReleaseBuffers", md.pool.nfree)
	}
	if err := md.Evaluate(sc.batch(4), l2, &j2); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l1, l2) || !slices.Equal(j1.Data, j2.Data) {
		t.Errorf("the step after ReleaseBuffers differs: losses %v, then %v", l1, l2)
	}
}

// TestPoolWithinPlan checks that the buffer pool holds no more than the
// planned peak of pooled values, also when programs of two batch sizes
// draw from it in turn, and that its reuse leaves every value as a model
// with a fresh pool computes it.
func TestPoolWithinPlan(t *testing.T) {
	for _, sc := range stepCases {
		t.Run(sc.name, func(t *testing.T) {
			md := openStepCase(t, sc)
			m := len(sc.tasks)
			for _, n := range []int{4, 2, 4, 2} {
				l := make([]float64, m)
				jac := png.NewJacobian(m, md.NumParams())
				if err := md.Evaluate(sc.batch(n), l, &jac); err != nil {
					t.Fatal(err)
				}
				if md.pool.limit <= 0 || md.pool.held > md.pool.limit {
					t.Errorf("batch %d: the pool holds %d elements, its limit is %d", n, md.pool.held, md.pool.limit)
				}
				fresh, err := Open(sc.model(t), mustTasks(t, sc.tasks...), Options{})
				if err != nil {
					t.Fatal(err)
				}
				fl := make([]float64, m)
				fj := png.NewJacobian(m, md.NumParams())
				if err := fresh.Evaluate(sc.batch(n), fl, &fj); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(l, fl) || !slices.Equal(jac.Data, fj.Data) {
					t.Errorf("batch %d: losses %v with a reused pool, %v with a fresh one (or J differs)", n, l, fl)
				}
			}
		})
	}
}

// TestReleaseModelData checks that after ReleaseModelData the model file
// holds no parameter values, the estimate counts θ alone, a step gives the
// same losses and Jacobian bit for bit, and the model saves from Weights
// to the same file as before the release.
func TestReleaseModelData(t *testing.T) {
	for _, sc := range stepCases {
		t.Run(sc.name, func(t *testing.T) {
			md := openStepCase(t, sc)
			m := len(sc.tasks)
			step := func() ([]float64, []float32) {
				losses := make([]float64, m)
				jac := png.NewJacobian(m, md.NumParams())
				if err := md.Evaluate(sc.batch(4), losses, &jac); err != nil {
					t.Fatal(err)
				}
				return losses, jac.Data
			}
			l0, j0 := step()
			dir := t.TempDir()
			before := filepath.Join(dir, "before.onnx")
			if err := importer.Save(before, md.m, md.Weights(), importer.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := md.ReleaseModelData(); err != nil {
				t.Fatal(err)
			}
			if held := md.m.InlineBytes(md.paramNames()); held != 0 {
				t.Errorf("the model file still holds %d bytes of parameters", held)
			}
			e, err := md.EstimateMemoryBatch(4)
			if err != nil {
				t.Fatal(err)
			}
			if n := int64(md.NumParams()); e.Weights != 4*n {
				t.Errorf("weights %d bytes after the release, want θ's %d", e.Weights, 4*n)
			}
			l1, j1 := step()
			if !slices.Equal(l0, l1) || !slices.Equal(j0, j1) {
				t.Error("the step changed after the release")
			}
			after := filepath.Join(dir, "after.onnx")
			if err := importer.Save(after, md.m, md.Weights(), importer.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(before)
			b, _ := os.ReadFile(after)
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("saved after the release: %d bytes, differing from the %d saved before", len(b), len(a))
			}
		})
	}
}
