package backend

import (
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Gather along an axis with constant indices (negative indices count from
// the end). The data may be a run-time node.

func init() { register("Gather", 1, lowerGather) }

func lowerGather(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	it, err := constInput(n, in, 1, "indices")
	if err != nil {
		return nil, err
	}
	a, err := axisAttr(n, 0, len(x.shape))
	if err != nil {
		return nil, err
	}
	ind := it.Int64s()
	d := x.shape[a]
	for i, v := range ind {
		if v < 0 {
			v += int64(d)
		}
		if v < 0 || v >= int64(d) {
			return nil, nodeErr(n, "index %d out of range for axis %d of size %d", ind[i], a, d)
		}
		ind[i] = v
	}
	out := append(append(append([]int{}, x.shape[:a]...), it.Shape...), x.shape[a+1:]...)
	outer, inner := shape.Numel(x.shape[:a]), shape.Numel(x.shape[a+1:])
	idx := make([]int, 0, shape.Numel(out))
	for o := 0; o < outer; o++ {
		for _, v := range ind {
			base := (o*d + int(v)) * inner
			for j := 0; j < inner; j++ {
				idx = append(idx, base+j)
			}
		}
	}
	v, err := b.move(n, "Gather", []*value{x}, out, idx)
	if err != nil {
		return nil, err
	}
	return []*value{v}, nil
}
