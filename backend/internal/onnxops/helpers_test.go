package onnxops

import (
	"math"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Test helpers shared by the op tests: build a
// one-node ONNX model, run it forward in float64, check gradients by
// central differences.

// testGraph builds m in float64 for the shapes of feeds, with the
// initializers in trainable as parameter nodes.
func testGraph(t *testing.T, m *importer.Model, feeds map[string]*importer.Tensor, trainable map[string]bool) *graph.Built {
	t.Helper()
	return testGraphWith(t, m, feeds, trainable, rewrite.Options{})
}

// testGraphWith is testGraph with the fusions rw leaves on.
func testGraphWith(t *testing.T, m *importer.Model, feeds map[string]*importer.Tensor, trainable map[string]bool, rw rewrite.Options) *graph.Built {
	t.Helper()
	bt, err := tryGraphWith(m, feeds, trainable, rw)
	if err != nil {
		t.Fatalf("building the graph: %v", err)
	}
	return bt
}

// unfused is the rewrite options that turn the passes named off.
func unfused(passes ...string) rewrite.Options { return rewrite.Options{Off: passes} }

func tryGraph(m *importer.Model, feeds map[string]*importer.Tensor, trainable map[string]bool) (*graph.Built, error) {
	return tryGraphWith(m, feeds, trainable, rewrite.Options{})
}

func tryGraphWith(m *importer.Model, feeds map[string]*importer.Tensor, trainable map[string]bool, rw rewrite.Options) (*graph.Built, error) {
	inits, err := m.Initializers()
	if err != nil {
		return nil, err
	}
	shapes := map[string][]int{}
	for k, v := range feeds {
		shapes[k] = v.Shape
	}
	bt, err := graph.Build(m.Proto.Graph, m.Opset(""), tensor.Float64, shapes, inits, trainable, false, graph.Options{Rewrites: rw})
	if err != nil {
		return nil, err
	}
	for k, n := range bt.Inputs {
		if err := graph.LetFloats(n, tensor.Float64, feeds[k].Shape, feeds[k].Float64s()); err != nil {
			return nil, err
		}
	}
	return bt, nil
}

// outputsOf runs bt forward (a machine over its whole graph) and returns
// the graph outputs of m.
func outputsOf(t *testing.T, m *importer.Model, bt *graph.Built) map[string]*importer.Tensor {
	t.Helper()
	vm := G.NewTapeMachine(bt.B.Graph)
	defer vm.Close()
	if err := graph.RunMachine(vm); err != nil {
		t.Fatalf("running: %v", err)
	}
	out := map[string]*importer.Tensor{}
	for _, o := range m.Proto.Graph.Output {
		v, ok := bt.Vals[o.GetName()]
		if !ok {
			t.Fatalf("output %q not produced", o.GetName())
		}
		if v.IsConst() {
			out[o.GetName()] = v.C
			continue
		}
		r, err := graph.TensorOf(o.GetName(), v.N)
		if err != nil {
			t.Fatal(err)
		}
		out[o.GetName()] = r
	}
	return out
}

// forward runs model m on feeds in float64 and returns its outputs.
func forward(t *testing.T, m *importer.Model, feeds map[string]*importer.Tensor) map[string]*importer.Tensor {
	t.Helper()
	return outputsOf(t, m, testGraph(t, m, feeds, nil))
}

// forwardWith is forward with the fusions rw leaves on.
func forwardWith(t *testing.T, m *importer.Model, feeds map[string]*importer.Tensor, rw rewrite.Options) map[string]*importer.Tensor {
	t.Helper()
	return outputsOf(t, m, testGraphWith(t, m, feeds, nil, rw))
}

// runOne builds a one-node model, runs it and returns its first output.
func runOne(t *testing.T, opType string, opset int64, attrs []*onnxpb.AttributeProto, ins []onnxtest.In) *importer.Tensor {
	t.Helper()
	m := onnxtest.OneNode(opType, opset, attrs, ins, "y")
	return forward(t, m, onnxtest.Feeds(ins))["y"]
}

// weightedSumGrads adds to bt's graph the loss L = Σ w·y over the values
// of ys in order (w holds one weight per value of each, one after the
// other) and L's gradients with respect to wrt, and runs the graph once.
// It returns L, the gradients and the machine, to run again after
// changing an input; the machine is closed when the test ends.
func weightedSumGrads(t *testing.T, bt *graph.Built, ys []graph.Node, w []float64, wrt ...graph.Node) (graph.Node, G.Nodes, G.VM) {
	t.Helper()
	off := make([]int, len(ys)+1) // where each value's weights start in w
	for i, n := range ys {
		off[i+1] = off[i] + shape.Numel(n.Shape())
	}
	loss, err := bt.B.Kernel("L", "weighted sum", ys, nil,
		func(dst []float64, in [][]float64) {
			for k, x := range in {
				for i, v := range x {
					dst[0] += w[off[k]+i] * v
				}
			}
		},
		func(k int, dst []float64, _ [][]float64, _, g []float64) {
			for i := range dst {
				dst[i] = w[off[k]+i] * g[0]
			}
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := G.Grad(loss, wrt...)
	if err != nil {
		t.Fatalf("Grad: %v", err)
	}
	vm := G.NewTapeMachine(bt.B.Graph)
	t.Cleanup(func() { vm.Close() })
	if err := graph.RunMachine(vm); err != nil {
		t.Fatal(err)
	}
	return loss, grads, vm
}

// gradCheck compares the gradient of L = Σ w·y (y the first output of m,
// w fixed random weights) with respect to wrt (a graph input or a float
// initializer) with central finite differences, element by element:
// |analytic − numeric| <= rtol·max(1, |numeric|).
func gradCheck(t *testing.T, m *importer.Model, feeds map[string]*importer.Tensor, wrt string, rtol float64) {
	t.Helper()
	inits, err := m.Initializers()
	if err != nil {
		t.Fatal(err)
	}
	_, isInit := inits[wrt]
	trainable := map[string]bool{}
	if isInit {
		trainable[wrt] = true
	}
	out := m.Proto.Graph.Output[0].GetName()
	// analytic
	bt := testGraph(t, m, feeds, trainable)
	y := bt.Vals[out]
	if y == nil || y.IsConst() {
		t.Fatalf("output %q is not computed at run time", out)
	}
	wn := bt.Params[wrt]
	if wn == nil {
		wn = bt.Inputs[wrt]
	}
	if wn == nil {
		t.Fatalf("%q is neither a graph input nor an initializer", wrt)
	}
	r := rand.New(rand.NewSource(7))
	w := make([]float64, shape.Numel(y.Shape))
	for i := range w {
		w[i] = 2*r.Float64() - 1
	}
	lossNode, grads, vm := weightedSumGrads(t, bt, []graph.Node{y.N}, w, wn)
	ga, err := graph.ValueFloats(grads[0].Value())
	if err != nil {
		t.Fatal(err)
	}
	ga = append([]float64{}, ga...)
	wnShape := wn.Shape()
	x0, err := graph.ValueFloats(wn.Value())
	if err != nil {
		t.Fatal(err)
	}
	x0 = append([]float64{}, x0...)
	lossAt := func(x []float64) float64 {
		if err := graph.LetFloats(wn, tensor.Float64, wnShape, x); err != nil {
			t.Fatal(err)
		}
		if err := graph.RunMachine(vm); err != nil {
			t.Fatal(err)
		}
		l, err := graph.ValueFloats(lossNode.Value())
		if err != nil {
			t.Fatal(err)
		}
		return l[0]
	}
	const h = 1e-6
	for j := range x0 {
		x := append([]float64{}, x0...)
		x[j] = x0[j] + h
		lp := lossAt(x)
		x[j] = x0[j] - h
		lm := lossAt(x)
		num := (lp - lm) / (2 * h)
		if math.Abs(ga[j]-num) > rtol*math.Max(1, math.Abs(num)) {
			t.Fatalf("d L / d %s[%d]: analytic %.8g, numeric %.8g", wrt, j, ga[j], num)
		}
	}
}
