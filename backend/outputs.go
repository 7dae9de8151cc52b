package backend

import (
	"errors"
	"fmt"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
)

// Outputs runs the model forward on the model inputs in batch (targets
// are not needed and are ignored) with the current parameters and returns
// the named values, keyed by name. A name may be any value of the ONNX
// graph (a graph output or an intermediate node output); with no names it
// returns every graph output. Values are float32 tensors when the model
// computes in float32 and float64 tensors with Options.Float64, int64
// tensors for run-time integer values (MaxPool's Indices); a value known
// at build time (a folded constant) is returned as it is.
// BatchNormalization follows Options.BatchNorm, as in Evaluate.
//
// Outputs is what accuracies and predictions are computed from. Its graph
// is compiled once per input-shape signature and set of names, like
// Evaluate's.
func (md *Model) Outputs(batch map[string]*importer.Tensor, names ...string) (map[string]*importer.Tensor, error) {
	if len(names) == 0 {
		for _, o := range md.m.Proto.Graph.Output {
			names = append(names, o.GetName())
		}
	}
	shapes, err := md.inputShapes(batch)
	if err != nil {
		return nil, err
	}
	ints, err := md.batchInts(batch)
	if err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	c, err := md.compile(shapes, ints, nil)
	if err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	bt := c.bt
	var errs []error
	var nodes, intNodes G.Nodes // float and int64 (MaxPool indices) values
	for _, name := range names {
		v, ok := bt.Vals[name]
		switch {
		case !ok || v == nil:
			errs = append(errs, fmt.Errorf("the model has no value %q", name))
		case v.Seq != nil:
			errs = append(errs, fmt.Errorf("value %q is a tensor sequence, expected a tensor", name))
		case graph.IsIntNode(v):
			intNodes = append(intNodes, v.N)
		case !v.IsConst():
			nodes = append(nodes, v.N)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("backend: Outputs: %w", errors.Join(errs...))
	}

	// The forward program for these names is cached beside Evaluate's
	// graphs under its own key ("outputs|" never starts a compile key).
	key := "outputs|" + signature(shapes) + intSignature(ints) + "|" + strings.Join(names, "\x00")
	oc, ok := md.cache[key]
	if !ok {
		// Values are read from sink copies, flat: oc.sink collects the
		// float values, oc.lossOut the int64 ones. The program runs the
		// ops' Do once each on this goroutine, without the TapeMachine's
		// in-place buffer reuse (exec.go).
		oc = &compiled{bt: bt, stats: md.stats}
		var roots G.Nodes
		if len(nodes) > 0 {
			if oc.sink, err = graph.ConcatSink(bt.B, "outputs", nodes); err != nil {
				return nil, fmt.Errorf("backend: Outputs: %w", err)
			}
			roots = append(roots, oc.sink)
		}
		if len(intNodes) > 0 {
			if oc.lossOut, err = graph.IntSink(intNodes); err != nil {
				return nil, fmt.Errorf("backend: Outputs: %w", err)
			}
			roots = append(roots, oc.lossOut)
		}
		if len(roots) > 0 {
			if oc.fwd, err = newProgram(bt.B.Graph, roots, nil, md.run, md.stats); err != nil {
				return nil, fmt.Errorf("backend: Outputs: %w", err)
			}
			oc.fwd.pool = md.bufPool()
			oc.fwd.pool.fit(oc.fwd.plan.pooledPeak(oc.fwd))
		}
		md.cache[key] = oc
	}
	out := map[string]*importer.Tensor{}
	var flat []float64
	var flatInt []int64
	if oc.fwd != nil {
		for _, p := range md.params {
			n, ok := bt.Params[p.Name]
			if !ok {
				continue
			}
			v := md.theta[p.Offset : p.Offset+shape.Numel(p.Shape)]
			if err := oc.bindParam(n, md.dt, p.Shape, v); err != nil {
				return nil, fmt.Errorf("backend: parameter %q: %w", p.Name, err)
			}
		}
		for name, n := range bt.Inputs {
			a := batch[name]
			if err := graph.LetFloats(n, md.dt, a.Shape, a.Float64s()); err != nil {
				return nil, fmt.Errorf("backend: model input %q: %w", name, err)
			}
		}
		if err := oc.fwd.forward(); err != nil {
			return nil, fmt.Errorf("backend: forward pass: %w", err)
		}
		if oc.sink != nil {
			if flat, err = graph.ValueFloats(oc.fwd.value(oc.sink)); err != nil {
				return nil, fmt.Errorf("backend: reading outputs: %w", err)
			}
		}
		if oc.lossOut != nil {
			if flatInt, err = graph.ValueInt64s(oc.fwd.value(oc.lossOut)); err != nil {
				return nil, fmt.Errorf("backend: reading int64 outputs: %w", err)
			}
		}
		oc.fwd.release() // flat and flatInt are not pool buffers
	}
	off, offInt := 0, 0
	for _, name := range names {
		v := bt.Vals[name]
		if v.IsConst() {
			out[name] = v.C
			continue
		}
		s := append([]int{}, v.N.Shape()...)
		sz := shape.Numel(s)
		if graph.IsIntNode(v) {
			out[name] = &importer.Tensor{Name: name, Type: importer.Int64, Shape: s, I64: append([]int64{}, flatInt[offInt:offInt+sz]...)}
			offInt += sz
			continue
		}
		d := flat[off : off+sz]
		off += sz
		t := &importer.Tensor{Name: name, Shape: s}
		if md.dt == tensor.Float64 {
			t.Type, t.F64 = importer.Float64, append([]float64{}, d...)
		} else {
			t.Type, t.F32 = importer.Float32, make([]float32, sz)
			for i, x := range d {
				t.F32[i] = float32(x)
			}
		}
		out[name] = t
	}
	return out, nil
}

// inputShapes checks that batch holds every model input as a float array
// of a compatible shape and returns the shapes by input name.
func (md *Model) inputShapes(batch map[string]*importer.Tensor) (map[string][]int, error) {
	var errs []error
	shapes := map[string][]int{}
	for _, in := range md.inputs {
		a, ok := batch[in.Name]
		if !ok || a == nil {
			errs = append(errs, fmt.Errorf("model input %q: no array %q in the data (arrays: %s)", in.Name, in.Name, arrayNames(batch)))
			continue
		}
		if !a.IsFloat() && !graph.IntegerType(in.Type) {
			errs = append(errs, fmt.Errorf("model input %q: array %q has element type %v, expected floating point", in.Name, in.Name, a.Type))
			continue
		}
		if in.Shape != nil {
			ok := len(a.Shape) == len(in.Shape)
			for i := 0; ok && i < len(in.Shape); i++ {
				ok = in.Shape[i] < 0 || in.Shape[i] == a.Shape[i]
			}
			if !ok {
				errs = append(errs, fmt.Errorf("model input %q: array %q has shape %v, the model expects %v (-1: any)", in.Name, in.Name, a.Shape, in.Shape))
				continue
			}
		}
		shapes[in.Name] = a.Shape
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("backend: %w", errors.Join(errs...))
	}
	return shapes, nil
}
