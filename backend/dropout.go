package backend

import "github.com/paretonav/paretonav/importer/onnxpb"

// Dropout in inference mode: the identity (the ratio, an attribute before
// opset 12 and an input from 12 on, is ignored; so is training_mode, which
// must not be true). The optional mask output is all ones.

func init() {
	register("Dropout", 1, lowerDropout)
	register("Dropout", 12, lowerDropout)
}

func lowerDropout(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	if b.opset >= 12 && optInput(in, 2) != nil {
		t, err := constInput(n, in, 2, "training_mode")
		if err != nil {
			return nil, err
		}
		if v := t.Int64s(); len(v) == 1 && v[0] != 0 {
			return nil, nodeErr(n, "training_mode is true; only inference-mode Dropout is supported")
		}
	}
	if len(n.Output) > 1 && n.Output[1] != "" {
		return nil, nodeErr(n, "the mask output %q is not supported", n.Output[1])
	}
	return []*value{x}, nil
}
