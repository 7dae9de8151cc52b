package backend

import "testing"

// TestSumIntoChoice checks which operand a gradient sum may write over:
// one that dies with it, lives in a pool buffer of the sum's length, is a
// value of the running backward pass and not a root.
func TestSumIntoChoice(t *testing.T) {
	buf := func(n int) []float32 { return make([]float32, n) }
	for _, tc := range []struct {
		name  string
		owned [][]float32 // operands 0 and 1
		roots []bool
		deps  []bool // operand depends on a task weight
		dying []int
		want  int
	}{
		{"first dies", [][]float32{buf(4), buf(4)}, []bool{false, false}, []bool{true, true}, []int{0, 1}, 0},
		{"only second dies", [][]float32{buf(4), buf(4)}, []bool{false, false}, []bool{true, true}, []int{1}, 1},
		{"none dies", [][]float32{buf(4), buf(4)}, []bool{false, false}, []bool{true, true}, nil, -1},
		{"root", [][]float32{buf(4), nil}, []bool{true, false}, []bool{true, true}, []int{0, 1}, -1},
		{"forward value", [][]float32{buf(4), nil}, []bool{false, false}, []bool{false, true}, []int{0, 1}, -1},
		{"not a pool buffer", [][]float32{nil, buf(3)}, []bool{false, false}, []bool{true, true}, []int{0, 1}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &program{
				args:  [][]int{nil, nil, {0, 1}},
				owned: append(tc.owned, nil),
				roots: append(tc.roots, false),
				deps:  [][]bool{{tc.deps[0]}, {tc.deps[1]}, {true}},
				dying: tc.dying,
			}
			if got := p.sumInto(2, 4); got != tc.want {
				t.Errorf("sumInto = %d, want %d", got, tc.want)
			}
		})
	}
}
