package graph

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// built is an ONNX graph lowered for one set of concrete input shapes.
type Built struct {
	B      *Builder
	Vals   map[string]*Value // every ONNX value by name
	Inputs map[string]Node   // model inputs fed at run time
	Params map[string]Node   // trainable initializers, by name
}

// Options choose between the fast paths of a build and the plain ones
// they must equal; the zero value takes every fast path. Tests turn one
// off to compare.
type Options struct {
	// Rewrites chooses the fusions (package rewrite).
	Rewrites rewrite.Options
	// WholeConvKernels keeps every tap of a convolution, those that read
	// only padding included (kernels.ConvParams.WholeKernel).
	WholeConvKernels bool
}

// Build lowers gp for the given concrete shapes of its (non
// initializer) inputs. Initializers named in trainable become parameter
// nodes holding their initial values; the others are constants.
func Build(gp *onnxpb.GraphProto, opset int64, dt tensor.Dtype, shapes map[string][]int, inits map[string]*importer.Tensor, trainable map[string]bool, bnTrain bool, opt Options) (*Built, error) {
	return BuildInts(gp, opset, dt, shapes, nil, nil, inits, trainable, nil, bnTrain, opt)
}

// BuildInts is Build with the values of the model inputs bound
// as build-time constants (see intinputs.go): the integer (and bool)
// inputs and those named in static. Such an input missing from ints is
// deferred: the nodes that depend on it are not lowered (Open's trial
// build, which has no data). paramValue, when not nil, gives the value a
// parameter node starts with (Model.compile: a view of θ, so that a
// cached graph holds no copy of the parameters); otherwise the node holds
// a copy of the initializer's values. The graph's patterns are fused
// first (package rewrite) with the passes opt leaves on.
func BuildInts(gp *onnxpb.GraphProto, opset int64, dt tensor.Dtype, shapes map[string][]int, static map[string]bool, ints, inits map[string]*importer.Tensor, trainable map[string]bool, paramValue func(name string) G.Value, bnTrain bool, opt Options) (*Built, error) {
	b := NewBuilder(dt, opset)
	b.BNTrain = bnTrain
	b.WholeConvKernels = opt.WholeConvKernels
	bt := &Built{B: b, Vals: map[string]*Value{}, Inputs: map[string]Node{}, Params: map[string]Node{}}
	for name, t := range inits {
		if !trainable[name] {
			bt.Vals[name] = ConstValue(t)
			continue
		}
		if !t.IsFloat() {
			return nil, fmt.Errorf("initializer %q: only floating-point initializers can be trained, it is %v", name, t.Type)
		}
		n := b.InputNode("param:"+name, t.Shape)
		var v G.Value
		if paramValue != nil {
			v = paramValue(name)
		}
		if v == nil {
			v = MakeValue(dt, t.Shape, t.Float64s())
		}
		if err := G.Let(n, v); err != nil {
			return nil, fmt.Errorf("initializer %q: %w", name, err)
		}
		bt.Params[name] = n
		bt.Vals[name] = NodeValue(n)
	}
	for _, vi := range gp.Input {
		name := vi.GetName()
		if _, ok := inits[name]; ok {
			continue
		}
		s, ok := shapes[name]
		if !ok {
			return nil, fmt.Errorf("model input %q: no shape given", name)
		}
		var et importer.DataType
		if tt := vi.GetType().GetTensorType(); tt != nil {
			et = importer.DataType(tt.GetElemType())
		}
		if static[name] || IntegerType(et) {
			if t, ok := ints[name]; ok {
				bt.Vals[name] = ConstValue(t)
			} else {
				b.Deferred = append(b.Deferred, name)
			}
			continue
		}
		if et != 0 {
			if et != importer.Float32 && et != importer.Float64 && et != importer.Float16 {
				return nil, fmt.Errorf("model input %q has element type %v; only floating-point and integer inputs are supported", name, et)
			}
		}
		n := b.InputNode("input:"+name, s)
		bt.Inputs[name] = n
		bt.Vals[name] = NodeValue(n)
	}
	nameNodes(gp)
	if err := b.lowerGraph(rewrite.Apply(gp, opt.Rewrites), bt.Vals); err != nil {
		return nil, err
	}
	return bt, nil
}

// RunMachine runs every instruction of m once, turning a panic into an
// error.
func RunMachine(m G.VM) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("backend: panic while running the graph: %v", r)
		}
	}()
	m.Reset()
	return m.RunAll()
}

// LetFloats binds data (row-major, shape s) to input node n.
func LetFloats(n Node, dt tensor.Dtype, s []int, data []float64) error {
	return G.Let(n, MakeValue(dt, s, data))
}

// TensorOf copies the value of node n into a float64 importer tensor.
func TensorOf(name string, n Node) (*importer.Tensor, error) {
	d, err := ValueFloats(n.Value())
	if err != nil {
		return nil, fmt.Errorf("value %q: %w", name, err)
	}
	return &importer.Tensor{Name: name, Type: importer.Float64, Shape: append([]int{}, n.Shape()...), F64: append([]float64{}, d...)}, nil
}
