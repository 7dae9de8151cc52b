package graph

import (
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// sequence is a tensor sequence under construction: len items, each made
// by item(i) on first use.
type Sequence struct {
	Items []*Value
	Item  func(i int) (*Value, error) // nil when every item is given
}

// At returns item i (0 <= i < len(s.items)).
func (s *Sequence) At(i int) (*Value, error) {
	if s.Items[i] == nil {
		v, err := s.Item(i)
		if err != nil {
			return nil, err
		}
		s.Items[i] = v
	}
	return s.Items[i], nil
}

// seqOps are the ops that take sequences: any other op meeting one is an
// error (checkSeqInputs).
var seqOps = map[string]bool{"SequenceAt": true, "SequenceLength": true, "ConcatFromSequence": true}

// checkSeqInputs errors when a sequence is an input of an op that takes
// only tensors, or a tensor the sequence input of one that takes a
// sequence.
func checkSeqInputs(n *onnxpb.NodeProto, in []*Value) error {
	for i, v := range in {
		if v == nil {
			continue
		}
		wantSeq := seqOps[n.GetOpType()] && i == 0
		if v.Seq != nil && !wantSeq {
			return NodeErr(n, "input %d %q is a tensor sequence; %s takes a tensor there", i, n.Input[i], n.GetOpType())
		}
		if v.Seq == nil && wantSeq {
			return NodeErr(n, "input %d %q is a tensor; %s takes a tensor sequence there", i, n.Input[i], n.GetOpType())
		}
	}
	return nil
}
