package onnxops

import (
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
)

func TestExpandTile(t *testing.T) {
	cases := []struct {
		name      string
		op        string
		opset     int64
		xs        []int
		operand   []int64
		wantShape []int
		want      []float64
	}{
		// x = [1, 2, 3] as a column [[1], [2], [3]]
		{"expand column", "Expand", 8, []int{3, 1}, []int64{2, 1, 4}, []int{2, 3, 4},
			[]float64{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}},
		{"expand to smaller shape", "Expand", 8, []int{3, 1}, []int64{1}, []int{3, 1}, []float64{1, 2, 3}},
		{"tile", "Tile", 6, []int{3, 1}, []int64{2, 3}, []int{6, 3},
			[]float64{1, 1, 1, 2, 2, 2, 3, 3, 3, 1, 1, 1, 2, 2, 2, 3, 3, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("x", c.xs, 1, 2, 3), onnxtest.InitI("s", []int{len(c.operand)}, c.operand...)}
			onnxtest.AssertClose(t, c.op, runOne(t, c.op, c.opset, nil, ins), c.wantShape, c.want, 0)
			gradCheck(t, onnxtest.OneNode(c.op, c.opset, nil, ins, "y"), onnxtest.Feeds(ins), "x", 1e-6)
		})
	}
}
