package backend

import (
	"math"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/png"
)

// tapeJacobian recomputes what Evaluate computes the way it used to: one
// TapeMachine run of the whole graph (forward and backward) per task with
// u = e_k, read from the sink node. It relies on the inputs and parameters
// bound by the Evaluate call that compiled c.
func tapeJacobian(t *testing.T, md *Model, c *compiled) ([]float64, []float32) {
	t.Helper()
	m := len(md.tasks)
	vm := G.NewTapeMachine(c.bt.B.Graph)
	defer vm.Close()
	jac := make([]float32, m*len(md.theta))
	var losses []float64
	for k := 0; k < m; k++ {
		for i, u := range c.u {
			v := 0.0
			if i == k {
				v = 1
			}
			if err := G.Let(u, scalarValue(md.dt, v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := graph.RunMachine(vm); err != nil {
			t.Fatal(err)
		}
		d, err := graph.ValueFloats(c.sink.Value())
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			losses = append(losses, d[:m]...)
		}
		if !c.hasGrad[k] {
			continue
		}
		off := m
		for _, j := range c.wrt {
			p := md.params[j]
			for i := 0; i < shape.Numel(p.Shape); i++ {
				jac[k*len(md.theta)+p.Offset+i] = float32(d[off+i])
			}
			off += shape.Numel(p.Shape)
		}
	}
	return losses, jac
}

// TestProgramMatchesTapeMachine: one forward pass and one backward-segment
// run per task give bit-for-bit the losses and Jacobian of a full
// TapeMachine run per task, in float32 and float64, for LeNet2 and MTAN
// (BatchNorm, MaxUnpool, attention gates).
func TestProgramMatchesTapeMachine(t *testing.T) {
	for _, sc := range stepCases {
		for _, f64 := range []bool{false, true} {
			name := sc.name + "/f32"
			if f64 {
				name = sc.name + "/f64"
			}
			t.Run(name, func(t *testing.T) {
				md, err := Open(sc.model(t), mustTasks(t, sc.tasks...), Options{Float64: f64})
				if err != nil {
					t.Fatal(err)
				}
				batch := sc.batch(3)
				m := len(sc.tasks)
				losses := make([]float64, m)
				jac := png.NewJacobian(m, md.NumParams())
				for rep := 0; rep < 2; rep++ { // a second call reuses the compiled program
					if err := md.Evaluate(batch, losses, &jac); err != nil {
						t.Fatal(err)
					}
				}
				var c *compiled
				for _, cc := range md.cache {
					if cc.prog != nil {
						c = cc
					}
				}
				wantL, wantJ := tapeJacobian(t, md, c)
				for i := range wantL {
					if losses[i] != wantL[i] {
						t.Errorf("loss %d: %v, TapeMachine %v", i, losses[i], wantL[i])
					}
				}
				nz := 0
				for i := range wantJ {
					if jac.Data[i] != wantJ[i] {
						t.Fatalf("J[%d,%d] = %v, TapeMachine %v", i/jac.N, i%jac.N, jac.Data[i], wantJ[i])
					}
					if wantJ[i] != 0 {
						nz++
					}
				}
				if nz < len(wantJ)/10 { // not trivially equal
					t.Errorf("only %d of %d Jacobian entries are nonzero", nz, len(wantJ))
				}
			})
		}
	}
}

// TestProgramReuseAcrossSteps checks that an Evaluate after one on other
// data (float32 kernel nodes then write into their previous results'
// buffers) gives bit-for-bit the losses and Jacobian of a fresh model.
func TestProgramReuseAcrossSteps(t *testing.T) {
	for _, sc := range stepCases {
		t.Run(sc.name, func(t *testing.T) {
			m := len(sc.tasks)
			eval := func(md *Model, batch map[string]*importer.Tensor) ([]float64, []float32) {
				losses := make([]float64, m)
				jac := png.NewJacobian(m, md.NumParams())
				if err := md.Evaluate(batch, losses, &jac); err != nil {
					t.Fatal(err)
				}
				return losses, jac.Data
			}
			open := func() *Model {
				md, err := Open(sc.model(t), mustTasks(t, sc.tasks...), Options{})
				if err != nil {
					t.Fatal(err)
				}
				return md
			}
			other := sc.batch(3)
			x := other["x"]
			xs := append([]float32(nil), x.F32...)
			for i := range xs {
				xs[i] = 1.5*xs[i] + 0.25
			}
			other["x"] = importer.NewFloat32("x", x.Shape, xs)
			md := open()
			eval(md, other)
			gotL, gotJ := eval(md, sc.batch(3))
			wantL, wantJ := eval(open(), sc.batch(3))
			for i := range wantL {
				if gotL[i] != wantL[i] {
					t.Errorf("loss %d: %v, fresh model %v", i, gotL[i], wantL[i])
				}
			}
			for i := range wantJ {
				if math.Float32bits(gotJ[i]) != math.Float32bits(wantJ[i]) {
					t.Fatalf("J[%d]: %v, fresh model %v", i, gotJ[i], wantJ[i])
				}
			}
		})
	}
}

// TestPlanFreesValues checks, with recomputing forced (rematMinBytes 0),
// that the planned peak of live values is at most 3/4 of what holding
// every value takes (the executor's old behaviour) and that the backward
// passes recompute cheap forward values (and only those) instead of
// keeping them; at the default rematMinBytes, that these small models
// recompute nothing; and in both, that a step leaves the program holding
// no value beyond its inputs.
func TestPlanFreesValues(t *testing.T) {
	for _, sc := range stepCases {
		for _, recompute := range []bool{true, false} {
			name := sc.name + "/keep"
			if recompute {
				name = sc.name + "/recompute"
			}
			t.Run(name, func(t *testing.T) {
				remat := defaultExec().rematMinBytes
				if recompute {
					remat = 0
				}
				planFreesValues(t, sc, recompute, execWith(func(o *execOptions) { o.rematMinBytes = remat }))
			})
		}
	}
}

// planFreesValues checks one model of TestPlanFreesValues.
func planFreesValues(t *testing.T, sc stepCase, recompute bool, opt Options) {
	md := openStepCaseWith(t, sc, opt)
	m := len(sc.tasks)
	jac := png.NewJacobian(m, md.NumParams())
	if err := md.Evaluate(sc.batch(3), make([]float64, m), &jac); err != nil {
		t.Fatal(err)
	}
	var p *program
	for _, c := range md.cache {
		if c.prog != nil {
			p = c.prog
		}
	}
	var all int64
	for _, b := range p.plan.bytes {
		all += b
	}
	peak := p.plan.peak(p)
	if peak <= 0 || recompute && peak > all*3/4 {
		t.Errorf("planned peak %d bytes, every value together %d: expected at most 3/4", peak, all)
	}
	for _, i := range append(append([]int{}, p.fwd...), p.bwd...) {
		if p.vals[i] != nil || p.owned[i] != nil {
			t.Fatalf("after Evaluate, node %v still holds a value", p.nodes[i])
		}
	}
	fwd := map[int]bool{}
	for _, i := range p.fwd {
		fwd[i] = true
	}
	recomputed := 0
	for _, i := range p.plan.segs[0] {
		if fwd[i] {
			recomputed++
			if !p.cheap(i) {
				t.Errorf("the backward pass recomputes %v, not a cheap op", p.nodes[i])
			}
		}
	}
	if recompute && recomputed == 0 {
		t.Error("the backward pass recomputes no forward value (Relu, Sigmoid, BatchNorm)")
	}
	if !recompute && recomputed != 0 {
		t.Errorf("the backward pass recomputes %d forward values of a model under rematMinBytes", recomputed)
	}
}

// TestJacobianZeroWithoutGradient checks, with the Jacobian full of NaN
// before the call (Evaluate no longer clears it whole), that the entries
// of a parameter no loss depends on and the row of a task whose loss
// depends on no parameter are zero, and the others are the gradients, in
// float32 and float64 and with the passes side by side or not.
func TestJacobianZeroWithoutGradient(t *testing.T) {
	x := []float32{0.5, -1, 2}
	// y1 = Σ x·w1 (tasks a and b), y2 = x·w2 (no task), y3 = Σ x (task c).
	m := onnxtest.GraphModel([]*onnxpb.NodeProto{
		onnxtest.Node("Mul", "m1", []string{"x", "w1"}, []string{"p1"}),
		onnxtest.Node("ReduceSum", "s1", []string{"p1"}, []string{"y1"}),
		onnxtest.Node("Mul", "m2", []string{"x", "w2"}, []string{"y2"}),
		onnxtest.Node("ReduceSum", "s3", []string{"x"}, []string{"y3"}),
	}, []*importer.Tensor{
		importer.NewFloat32("w1", []int{3}, []float32{1, 2, 3}),
		importer.NewFloat32("w2", []int{3}, []float32{4, 5, 6}),
	}, map[string][]int64{"x": {3}}, "y1", "y2", "y3")
	for _, f64 := range []bool{false, true} {
		for _, limit := range []int64{-1, defaultExec().concurrentPassMaxBytes} {
			md, err := Open(m, mustTasks(t, "a:output:y1", "b:output:y1", "c:output:y3"), Options{Float64: f64})
			if err != nil {
				t.Fatal(err)
			}
			md.run.concurrentPassMaxBytes = limit
			jac := png.NewJacobian(3, md.NumParams())
			for i := range jac.Data {
				jac.Data[i] = float32(math.NaN())
			}
			if err := md.Evaluate(map[string]*importer.Tensor{"x": importer.NewFloat32("x", []int{3}, x)}, make([]float64, 3), &jac); err != nil {
				t.Fatal(err)
			}
			w1, w2 := md.params[0], md.params[1]
			if w1.Name != "w1" {
				w1, w2 = w2, w1
			}
			for k := 0; k < 3; k++ {
				row := jac.Row(k)
				for i := 0; i < 3; i++ {
					want := float32(0)
					if k < 2 {
						want = x[i] // ∂(Σ x·w1)/∂w1 = x for the output loss (sum)
					}
					if got := row[w1.Offset+i]; got != want {
						t.Errorf("f64=%v limit=%d: J[%d][w1 %d] = %v, want %v", f64, limit, k, i, got, want)
					}
					if got := row[w2.Offset+i]; got != 0 {
						t.Errorf("f64=%v limit=%d: J[%d][w2 %d] = %v, want 0 (no loss depends on w2)", f64, limit, k, i, got)
					}
				}
			}
		}
	}
}
