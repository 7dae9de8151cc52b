package onnxops

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Tensor sequences, as PyTorch's dynamo exporter (optimize=False) writes
// torch.chunk and torch.split: SplitToSequence, then a SequenceAt per
// piece at a constant position. A sequence lives only while the graph is
// built (graph.Value.Seq): its pieces are ordinary values, made when a
// SequenceAt first asks for one (a piece nobody reads costs nothing), so
// they are constants or data movements with their gradients. Positions
// must be known when the graph is built. SequenceConstruct,
// SequenceLength and ConcatFromSequence work on these sequences too.

func init() {
	graph.Register("SplitToSequence", 11, lowerSplitToSequence)
	graph.Register("SequenceAt", 11, lowerSequenceAt)
	graph.Register("SequenceConstruct", 11, lowerSequenceConstruct)
	graph.Register("SequenceLength", 11, lowerSequenceLength)
	graph.Register("ConcatFromSequence", 11, lowerConcatFromSequence)
}

func lowerSplitToSequence(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	axis, err := graph.AttrInt(n, "axis", 0)
	if err != nil {
		return nil, err
	}
	keepdims, err := graph.AttrInt(n, "keepdims", 1)
	if err != nil {
		return nil, err
	}
	a, err := graph.NormAxis(n, axis, len(x.Shape))
	if err != nil {
		return nil, err
	}
	dim := x.Shape[a]
	var sizes []int
	squeeze := false
	if graph.OptInput(in, 1) == nil {
		// pieces of one, the axis kept or dropped
		for range dim {
			sizes = append(sizes, 1)
		}
		squeeze = keepdims == 0
	} else {
		st, err := graph.ConstInput(n, in, 1, "split")
		if err != nil {
			return nil, err
		}
		sp := st.Int64s()
		switch {
		case len(st.Shape) == 0:
			if sp[0] <= 0 {
				return nil, graph.NodeErr(n, "split %d: expected a positive piece size", sp[0])
			}
			for left := dim; left > 0; left -= int(sp[0]) {
				sizes = append(sizes, min(int(sp[0]), left))
			}
		case len(st.Shape) == 1:
			total := 0
			for _, s := range sp {
				if s < 0 {
					return nil, graph.NodeErr(n, "split %v: expected sizes >= 0", sp)
				}
				sizes = append(sizes, int(s))
				total += int(s)
			}
			if total != dim {
				return nil, graph.NodeErr(n, "split %v sums to %d, but axis %d has size %d", sp, total, a, dim)
			}
		default:
			return nil, graph.NodeErr(n, "split %q has shape %v, expected a scalar or a 1-D tensor", n.Input[1], st.Shape)
		}
	}
	starts := make([]int, len(sizes))
	for i := 1; i < len(sizes); i++ {
		starts[i] = starts[i-1] + sizes[i-1]
	}
	seq := &graph.Sequence{Items: make([]*graph.Value, len(sizes))}
	seq.Item = func(i int) (*graph.Value, error) {
		pn := &onnxpb.NodeProto{Name: proto.String(fmt.Sprintf("%s[%d]", n.GetName(), i)), OpType: n.OpType, Output: []string{fmt.Sprintf("%s[%d]", n.Output[0], i)}}
		v, err := splitPiece(b, pn, "SplitToSequence", x, a, starts[i], sizes[i])
		if err != nil || !squeeze {
			return v, err
		}
		s := append(append([]int{}, v.Shape[:a]...), v.Shape[a+1:]...)
		r, err := reshapeTo(b, pn, v, s)
		if err != nil {
			return nil, err
		}
		return r[0], nil
	}
	return []*graph.Value{{Seq: seq}}, nil
}

// splitPiece is x's slice [start, start+size) along axis a.
func splitPiece(b *graph.Builder, n *onnxpb.NodeProto, kind string, x *graph.Value, a, start, size int) (*graph.Value, error) {
	dim := x.Shape[a]
	outer, inner := shape.Numel(x.Shape[:a]), shape.Numel(x.Shape[a+1:])
	out := append([]int{}, x.Shape...)
	out[a] = size
	idx := make([]int, 0, shape.Numel(out))
	for o := 0; o < outer; o++ {
		base := (o*dim + start) * inner
		for j := 0; j < size*inner; j++ {
			idx = append(idx, base+j)
		}
	}
	return b.Move(n, kind, []*graph.Value{x}, out, idx)
}

// seqPosition is a SequenceAt position: a constant integer scalar (or
// one-element tensor), negative from the end, within the sequence.
func seqPosition(n *onnxpb.NodeProto, in []*graph.Value, length int) (int, error) {
	pt, err := graph.ConstInput(n, in, 1, "position")
	if err != nil {
		return 0, err
	}
	if pt.IsFloat() || pt.Len() != 1 {
		return 0, graph.NodeErr(n, "position %q: expected an integer scalar, got %v of shape %v", n.Input[1], pt.Type, pt.Shape)
	}
	p := pt.Int64s()[0]
	if p < -int64(length) || p >= int64(length) {
		return 0, graph.NodeErr(n, "position %d is out of range for a sequence of %d tensors", p, length)
	}
	if p < 0 {
		p += int64(length)
	}
	return int(p), nil
}

func lowerSequenceAt(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	s, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	p, err := seqPosition(n, in, len(s.Seq.Items))
	if err != nil {
		return nil, err
	}
	v, err := s.Seq.At(p)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{v}, nil
}

func lowerSequenceConstruct(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	seq := &graph.Sequence{}
	for i := range in {
		v, err := graph.Input(n, in, i)
		if err != nil {
			return nil, err
		}
		seq.Items = append(seq.Items, v)
	}
	return []*graph.Value{{Seq: seq}}, nil
}

func lowerSequenceLength(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	s, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	t := &importer.Tensor{Name: n.Output[0], Type: importer.Int64, Shape: []int{}, I64: []int64{int64(len(s.Seq.Items))}}
	return []*graph.Value{graph.ConstValue(t)}, nil
}

// lowerConcatFromSequence is Concat of the sequence's tensors along axis,
// each first given a new axis there when new_axis is 1 (numpy's stack).
func lowerConcatFromSequence(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	s, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	if !graph.HasAttr(n, "axis") {
		return nil, graph.NodeErr(n, "attribute \"axis\" is required")
	}
	axis, err := graph.AttrInt(n, "axis", 0)
	if err != nil {
		return nil, err
	}
	newAxis, err := graph.AttrInt(n, "new_axis", 0)
	if err != nil {
		return nil, err
	}
	if len(s.Seq.Items) == 0 {
		return nil, graph.NodeErr(n, "the sequence %q is empty", n.Input[0])
	}
	cn := &onnxpb.NodeProto{Name: n.Name, OpType: n.OpType, Output: n.Output,
		Attribute: []*onnxpb.AttributeProto{{Name: proto.String("axis"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(axis)}}}
	items := make([]*graph.Value, len(s.Seq.Items))
	for i := range items {
		v, err := s.Seq.At(i)
		if err != nil {
			return nil, err
		}
		cn.Input = append(cn.Input, fmt.Sprintf("%s[%d]", n.Input[0], i))
		if newAxis == 1 {
			a, err := graph.NormAxis(n, axis, len(v.Shape)+1)
			if err != nil {
				return nil, err
			}
			sh := append(append(append([]int{}, v.Shape[:a]...), 1), v.Shape[a:]...)
			un := &onnxpb.NodeProto{Name: proto.String(fmt.Sprintf("%s[%d]", n.GetName(), i)), OpType: n.OpType, Output: []string{cn.Input[i]}}
			r, err := reshapeTo(b, un, v, sh)
			if err != nil {
				return nil, err
			}
			v = r[0]
		}
		items[i] = v
	}
	return lowerConcat(b, cn, items)
}
