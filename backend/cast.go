package backend

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Cast. Constants are converted at build time (importer.EvalNode); a
// run-time float tensor cast to a float type is the identity (every float
// node has the graph's element type). A run-time tensor cast to BOOL is a
// run-time bool (1 where it is non-zero, compare.go), and to an integer
// type its values truncated toward zero, as ONNX casts floats to integers;
// both carry no gradient and stay float nodes (a mask cast to int64 and
// summed, say), so they cannot serve as shapes or indices.

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
	case importer.Bool:
		if err := refuseIntNodes(n, x); err != nil {
			return nil, err
		}
		v, err := boolOf(b, n, x, func(v float64) bool { return v != 0 })
		if err != nil {
			return nil, err
		}
		return []*value{v}, nil
	}
	if isIntNode(x) && importer.DataType(to) == importer.Int64 {
		return []*value{x}, nil
	}
	if integerType(importer.DataType(to)) && !isIntNode(x) {
		v, err := truncOf(b, n, x)
		if err != nil {
			return nil, err
		}
		return []*value{v}, nil
	}
	return nil, nodeErr(n, "casting a run-time tensor to %v is not supported (only to floating-point types, BOOL and integer types)", importer.DataType(to))
}

// truncOf adds a node holding x's values truncated toward zero, without
// gradient (a run-time Cast to an integer type).
func truncOf(b *builder, n *onnxpb.NodeProto, x *value) (*value, error) {
	fwd := func(dst []float64, in [][]float64) {
		for i, v := range in[0] {
			dst[i] = math.Trunc(v)
		}
	}
	fwd32 := func(dst []float32, in [][]float32) {
		parallel.Elems(len(dst), func(lo, hi int) {
			for i, v := range in[0][lo:hi] {
				dst[lo+i] = float32(math.Trunc(float64(v)))
			}
		})
	}
	r, err := b.fillingKernel32(n.GetName(), n.GetOpType(), []gnode{b.node(x)}, x.shape, fwd, nil, nil, fwd32, nil)
	if err != nil {
		return nil, err
	}
	return nodeValue(r), nil
}
