package backend

import (
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Cast. Constants are converted at build time (importer.EvalNode); a
// run-time float tensor cast to a float type is the identity (every float
// node has the graph's element type).

func init() { register("Cast", 1, lowerCast) }

func lowerCast(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	if x.isConst() {
		return evalConst(b, n, []*importer.Tensor{x.c})
	}
	to, err := attrInt(n, "to", 0)
	if err != nil {
		return nil, err
	}
	switch importer.DataType(to) {
	case importer.Float32, importer.Float64, importer.Float16, onnxpb.TensorProto_BFLOAT16:
		return []*value{x}, nil
	}
	return nil, nodeErr(n, "casting a run-time tensor to %v is not supported (only to floating-point types)", importer.DataType(to))
}
