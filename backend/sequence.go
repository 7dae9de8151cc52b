package backend

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Tensor sequences, as PyTorch's dynamo exporter (optimize=False) writes
// torch.chunk and torch.split: SplitToSequence, then a SequenceAt per
// piece at a constant position. A sequence lives only while the graph is
// built (value.seq): its pieces are ordinary values, made when a
// SequenceAt first asks for one (a piece nobody reads costs nothing), so
// they are constants or data movements with their gradients. Positions
// must be known when the graph is built. SequenceConstruct,
// SequenceLength and ConcatFromSequence work on these sequences too.

func init() {
	register("SplitToSequence", 11, lowerSplitToSequence)
	register("SequenceAt", 11, lowerSequenceAt)
	register("SequenceConstruct", 11, lowerSequenceConstruct)
	register("SequenceLength", 11, lowerSequenceLength)
	register("ConcatFromSequence", 11, lowerConcatFromSequence)
}

func lowerSplitToSequence(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	axis, err := attrInt(n, "axis", 0)
	if err != nil {
		return nil, err
	}
	keepdims, err := attrInt(n, "keepdims", 1)
	if err != nil {
		return nil, err
	}
	a, err := normAxis(n, axis, len(x.shape))
	if err != nil {
		return nil, err
	}
	dim := x.shape[a]
	var sizes []int
	squeeze := false
	if optInput(in, 1) == nil {
		// pieces of one, the axis kept or dropped
		for range dim {
			sizes = append(sizes, 1)
		}
		squeeze = keepdims == 0
	} else {
		st, err := constInput(n, in, 1, "split")
		if err != nil {
			return nil, err
		}
		sp := st.Int64s()
		switch {
		case len(st.Shape) == 0:
			if sp[0] <= 0 {
				return nil, nodeErr(n, "split %d: expected a positive piece size", sp[0])
			}
			for left := dim; left > 0; left -= int(sp[0]) {
				sizes = append(sizes, min(int(sp[0]), left))
			}
		case len(st.Shape) == 1:
			total := 0
			for _, s := range sp {
				if s < 0 {
					return nil, nodeErr(n, "split %v: expected sizes >= 0", sp)
				}
				sizes = append(sizes, int(s))
				total += int(s)
			}
			if total != dim {
				return nil, nodeErr(n, "split %v sums to %d, but axis %d has size %d", sp, total, a, dim)
			}
		default:
			return nil, nodeErr(n, "split %q has shape %v, expected a scalar or a 1-D tensor", n.Input[1], st.Shape)
		}
	}
	starts := make([]int, len(sizes))
	for i := 1; i < len(sizes); i++ {
		starts[i] = starts[i-1] + sizes[i-1]
	}
	seq := &sequence{items: make([]*value, len(sizes))}
	seq.item = func(i int) (*value, error) {
		pn := &onnxpb.NodeProto{Name: proto.String(fmt.Sprintf("%s[%d]", n.GetName(), i)), OpType: n.OpType, Output: []string{fmt.Sprintf("%s[%d]", n.Output[0], i)}}
		v, err := splitPiece(b, pn, "SplitToSequence", x, a, starts[i], sizes[i])
		if err != nil || !squeeze {
			return v, err
		}
		s := append(append([]int{}, v.shape[:a]...), v.shape[a+1:]...)
		r, err := reshapeTo(b, pn, v, s)
		if err != nil {
			return nil, err
		}
		return r[0], nil
	}
	return []*value{{seq: seq}}, nil
}

// splitPiece is x's slice [start, start+size) along axis a.
func splitPiece(b *builder, n *onnxpb.NodeProto, kind string, x *value, a, start, size int) (*value, error) {
	dim := x.shape[a]
	outer, inner := shape.Numel(x.shape[:a]), shape.Numel(x.shape[a+1:])
	out := append([]int{}, x.shape...)
	out[a] = size
	idx := make([]int, 0, shape.Numel(out))
	for o := 0; o < outer; o++ {
		base := (o*dim + start) * inner
		for j := 0; j < size*inner; j++ {
			idx = append(idx, base+j)
		}
	}
	return b.move(n, kind, []*value{x}, out, idx)
}

// seqPosition is a SequenceAt position: a constant integer scalar (or
// one-element tensor), negative from the end, within the sequence.
func seqPosition(n *onnxpb.NodeProto, in []*value, length int) (int, error) {
	pt, err := constInput(n, in, 1, "position")
	if err != nil {
		return 0, err
	}
	if pt.IsFloat() || pt.Len() != 1 {
		return 0, nodeErr(n, "position %q: expected an integer scalar, got %v of shape %v", n.Input[1], pt.Type, pt.Shape)
	}
	p := pt.Int64s()[0]
	if p < -int64(length) || p >= int64(length) {
		return 0, nodeErr(n, "position %d is out of range for a sequence of %d tensors", p, length)
	}
	if p < 0 {
		p += int64(length)
	}
	return int(p), nil
}

func lowerSequenceAt(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	s, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	p, err := seqPosition(n, in, len(s.seq.items))
	if err != nil {
		return nil, err
	}
	v, err := s.seq.at(p)
	if err != nil {
		return nil, err
	}
	return []*value{v}, nil
}

func lowerSequenceConstruct(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	seq := &sequence{}
	for i := range in {
		v, err := input(n, in, i)
		if err != nil {
			return nil, err
		}
		seq.items = append(seq.items, v)
	}
	return []*value{{seq: seq}}, nil
}

func lowerSequenceLength(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	s, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	t := &importer.Tensor{Name: n.Output[0], Type: importer.Int64, Shape: []int{}, I64: []int64{int64(len(s.seq.items))}}
	return []*value{constValue(t)}, nil
}

// lowerConcatFromSequence is Concat of the sequence's tensors along axis,
// each first given a new axis there when new_axis is 1 (numpy's stack).
func lowerConcatFromSequence(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	s, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	if !hasAttr(n, "axis") {
		return nil, nodeErr(n, "attribute \"axis\" is required")
	}
	axis, err := attrInt(n, "axis", 0)
	if err != nil {
		return nil, err
	}
	newAxis, err := attrInt(n, "new_axis", 0)
	if err != nil {
		return nil, err
	}
	if len(s.seq.items) == 0 {
		return nil, nodeErr(n, "the sequence %q is empty", n.Input[0])
	}
	cn := &onnxpb.NodeProto{Name: n.Name, OpType: n.OpType, Output: n.Output,
		Attribute: []*onnxpb.AttributeProto{{Name: proto.String("axis"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(axis)}}}
	items := make([]*value, len(s.seq.items))
	for i := range items {
		v, err := s.seq.at(i)
		if err != nil {
			return nil, err
		}
		cn.Input = append(cn.Input, fmt.Sprintf("%s[%d]", n.Input[0], i))
		if newAxis == 1 {
			a, err := normAxis(n, axis, len(v.shape)+1)
			if err != nil {
				return nil, err
			}
			sh := append(append(append([]int{}, v.shape[:a]...), 1), v.shape[a:]...)
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
