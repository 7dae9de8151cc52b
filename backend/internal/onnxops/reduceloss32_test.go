package onnxops

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestReduce32MatchesFloat64 checks the float32 kernels of ReduceSum,
// ReduceMean and ReduceL2 (F.normalize's norm in the MTANs) against the
// float64 ones, bit for bit, into dirty buffers, over inner, outer and
// all axes.
func TestReduce32MatchesFloat64(t *testing.T) {
	for _, op := range []string{"ReduceSum", "ReduceMean", "ReduceL2"} {
		for _, axes := range [][]int64{{1}, {3}, {0, 2}, {0, 1, 2, 3}} {
			n := &onnxpb.NodeProto{Name: proto.String("r"), OpType: proto.String(op), Input: []string{"x"}, Output: []string{"y"},
				Attribute: []*onnxpb.AttributeProto{onnxtest.AInts("axes", axes...), onnxtest.AInt("keepdims", 1)}}
			k := lowerKernel(t, lowerReduce, n, []int{2, 3, 5, 7})
			checkKernel32(t, k, 5, 2)
		}
	}
}
