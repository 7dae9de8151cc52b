package backend

import (
	"slices"
	"testing"

	"github.com/paretonav/paretonav/png"
)

// TestSumInPlace checks that gradient sums written over an operand that
// dies with them (SumInPlace) give the losses and J of sums into fresh
// buffers bit for bit, over two steps each (pool buffers reused), and
// that some sums were written in place.
func TestSumInPlace(t *testing.T) {
	defer func(v bool) { SumInPlace = v }(SumInPlace)
	for _, sc := range stepCases {
		t.Run(sc.name, func(t *testing.T) {
			md := openStepCase(t, sc)
			m := len(sc.tasks)
			step := func(inPlace bool) ([]float64, []float32) {
				SumInPlace = inPlace
				losses := make([]float64, m)
				jac := png.NewJacobian(m, md.NumParams())
				if err := md.Evaluate(sc.batch(4), losses, &jac); err != nil {
					t.Fatal(err)
				}
				return losses, jac.Data
			}
			l0, j0 := step(false)
			before := inPlaceSums.Load()
			l1, j1 := step(true)
			if inPlaceSums.Load() == before {
				t.Error("no gradient sum was written in place")
			}
			l2, j2 := step(true)
			l3, j3 := step(false)
			for i, s := range []struct {
				l []float64
				j []float32
			}{{l1, j1}, {l2, j2}, {l3, j3}} {
				if !slices.Equal(s.l, l0) || !slices.Equal(s.j, j0) {
					t.Errorf("step %d differs from the sums into fresh buffers", i+1)
				}
			}
		})
	}
}

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
