package backend

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer"
)

// Integer model inputs (and float inputs used only as Resize scales and
// the like). Gorgonia graphs here compute in one float type,
// so an integer (or bool) model input is never a run-time node: its
// values are bound from the batch when the graph is built, as constants,
// and the compiled-graph cache keys on them. That is cheap and exact when
// the input feeds only shape-like or index-like operands (Reshape's
// shape, Gather's indices, TopK's k, Resize's sizes, ...), which is what
// PyTorch exports use integer inputs for. An integer input that feeds a
// data operand (Mod of two int tensors, say) is a design limit: Open
// returns a *LimitError naming the node.

// indexOperand lists, per op, the inputs whose values are indices, shapes
// or counts (never differentiated). Integer model inputs may feed only
// these. Shape and Size read only the shape; EyeLike only shape and type.
var indexOperand = map[string][]int{
	"Reshape": {1}, "Unsqueeze": {1}, "Squeeze": {1}, "Slice": {1, 2, 3, 4}, "Split": {1},
	"ReduceSum": {1}, "ReduceMean": {1}, "ReduceL2": {1}, "ReduceMax": {1}, "ReduceMin": {1},
	"ReduceProd": {1}, "ReduceL1": {1}, "ReduceSumSquare": {1}, "ReduceLogSum": {1},
	"ReduceLogSumExp": {1}, "Expand": {1}, "Tile": {1}, "ConstantOfShape": {0},
	"Resize": {1, 2, 3}, "Upsample": {1}, "Pad": {1, 3}, "Gather": {1}, "GatherElements": {1},
	"ScatterElements": {1}, "Scatter": {1}, "Shape": {0}, "Size": {0}, "Range": {0, 1, 2},
	"TopK": {1}, "MaxUnpool": {1, 2}, "OneHot": {0, 1}, "EyeLike": {0}, "ReverseSequence": {1},
	"RoiAlign": {2}, "NonMaxSuppression": {2}, "Dropout": {2}, "CumSum": {1},
	"SplitToSequence": {1}, "SequenceAt": {1},
}

// checkIntInputs returns a *LimitError (joined, one per use) for every
// integer model input that feeds a data operand.
func (md *Model) checkIntInputs() error {
	ints := map[string]bool{}
	for _, in := range md.inputs {
		if graph.IntegerType(in.Type) {
			ints[in.Name] = true
		}
	}
	if len(ints) == 0 {
		return nil
	}
	var errs []error
	for i, n := range md.m.Proto.Graph.Node {
		ok := map[int]bool{}
		for _, k := range indexOperand[n.GetOpType()] {
			ok[k] = true
		}
		for k, s := range n.Input {
			if !ints[s] || ok[k] {
				continue
			}
			name := n.GetName()
			if name == "" {
				name = fmt.Sprintf("#%d", i)
			}
			errs = append(errs, &graph.LimitError{Node: name, OpType: n.GetOpType(), Opset: md.opset,
				Reason: fmt.Sprintf("integer model input %q as data operand %d (integer inputs may only be shapes, indices or counts, bound when the graph is built)", s, k)})
		}
	}
	return errors.Join(errs...)
}

// staticInputs returns the model inputs bound when the graph is built:
// every integer input, and every float input that only feeds operands of
// indexOperand (Resize's scales, say).
func (md *Model) staticInputs() map[string]bool {
	uses := map[string][]bool{} // per input: is each use an index operand?
	for _, n := range md.m.Proto.Graph.Node {
		ok := map[int]bool{}
		for _, k := range indexOperand[n.GetOpType()] {
			ok[k] = true
		}
		for k, s := range n.Input {
			uses[s] = append(uses[s], ok[k])
		}
	}
	out := map[string]bool{}
	for _, in := range md.inputs {
		if graph.IntegerType(in.Type) {
			out[in.Name] = true
			continue
		}
		all := len(uses[in.Name]) > 0
		for _, u := range uses[in.Name] {
			all = all && u
		}
		if all {
			out[in.Name] = true
		}
	}
	return out
}

// batchInts returns the batch arrays of the inputs bound at build time
// (md.static): integer inputs as int64 tensors of the inputs' element
// types (float arrays are accepted when every value is an integer, as NPZ
// files written from float data hold), float inputs as they are.
func (md *Model) batchInts(batch map[string]*importer.Tensor) (map[string]*importer.Tensor, error) {
	var out map[string]*importer.Tensor
	for _, in := range md.inputs {
		if !md.static[in.Name] {
			continue
		}
		a, ok := batch[in.Name]
		if !ok || a == nil {
			return nil, fmt.Errorf("model input %q: no array %q in the data (arrays: %s)", in.Name, in.Name, arrayNames(batch))
		}
		if out == nil {
			out = map[string]*importer.Tensor{}
		}
		if !graph.IntegerType(in.Type) {
			out[in.Name] = a
			continue
		}
		var v []int64
		if a.IsFloat() {
			for i, f := range a.Float64s() {
				if f != math.Trunc(f) || math.IsInf(f, 0) {
					return nil, fmt.Errorf("model input %q (%v): element %d of array %q is %v, expected an integer", in.Name, in.Type, i, in.Name, f)
				}
				v = append(v, int64(f))
			}
		} else {
			v = a.Int64s()
		}
		out[in.Name] = &importer.Tensor{Name: in.Name, Type: in.Type, Shape: append([]int{}, a.Shape...), I64: v}
	}
	return out, nil
}

// intSignature keys the graph cache on the values of the integer inputs.
func intSignature(ints map[string]*importer.Tensor) string {
	if len(ints) == 0 {
		return ""
	}
	keys := make([]string, 0, len(ints))
	for k := range ints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteString("|ints:")
	for _, k := range keys {
		fmt.Fprintf(&sb, "%q%v=%v;", k, ints[k].Shape, ints[k].Float64s())
	}
	return sb.String()
}
