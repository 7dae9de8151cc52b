package onnxops

import (
	"fmt"
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Mod (opset 10; 13 adds bfloat16) with numpy broadcasting. fmod = 1 is
// C's fmod, the remainder with the dividend's sign; fmod = 0 the
// remainder with the divisor's sign (Python's %), which the operator
// defines for integers only. Constants fold at build time
// (importer.EvalNode). A run-time float tensor computes either in the
// graph's float type: with fmod = 0 it holds integers (a Cast to an
// integer type, compare.go's bools), whose floor remainder it gives
// exactly. Run-time int64 tensors (MaxPool indices) compute in int64,
// without gradient. The gradient is 1 with respect to the dividend a and
// −q with respect to the divisor b, q the quotient a/b rounded as the
// remainder was (toward zero for fmod, down otherwise).

func init() { graph.Register("Mod", 10, lowerMod) }

// floorMod is a − ⌊a/b⌋·b.
func floorMod(a, b float64) float64 {
	r := math.Mod(a, b)
	if r != 0 && (r < 0) != (b < 0) {
		r += b
	}
	return r
}

func lowerMod(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	y, err := graph.Input(n, in, 1)
	if err != nil {
		return nil, err
	}
	fmod, err := graph.AttrInt(n, "fmod", 0)
	if err != nil {
		return nil, err
	}
	if fmod != 0 && fmod != 1 {
		return nil, graph.NodeErr(n, "fmod = %d, expected 0 or 1", fmod)
	}
	if x.IsConst() && y.IsConst() {
		return lowerFold(b, n, in)
	}
	out, err := shape.Broadcast(x.Shape, y.Shape)
	if err != nil {
		return nil, graph.NodeErr(n, "inputs %q and %q: %v", n.Input[0], n.Input[1], err)
	}
	ia, ib := shape.NewBcast(x.Shape, out), shape.NewBcast(y.Shape, out)
	at := atB
	if graph.IsIntNode(x) || graph.IsIntNode(y) {
		v, err := b.IntOp(n, "Mod", []*graph.Value{x, y}, out, func(dst []int64, in [][]int64) {
			for i := range dst {
				a, c := in[0][at(ia, i)], in[1][at(ib, i)]
				if c == 0 {
					panic(fmt.Sprintf("integer modulo by zero (element %d)", i))
				}
				r := a % c
				if fmod == 0 && r != 0 && (r < 0) != (c < 0) {
					r += c
				}
				dst[i] = r
			}
		})
		if err != nil {
			return nil, err
		}
		return []*graph.Value{v}, nil
	}
	f, quot := floorMod, math.Floor
	if fmod == 1 {
		f, quot = math.Mod, math.Trunc
	}
	fwd := func(dst []float64, in [][]float64) {
		a, c := in[0], in[1]
		for i := range dst {
			dst[i] = f(a[at(ia, i)], c[at(ib, i)])
		}
	}
	bwd := func(k int, dst []float64, in [][]float64, _, g []float64) {
		a, c := in[0], in[1]
		for i, gi := range g {
			if k == 0 {
				dst[at(ia, i)] += gi
				continue
			}
			av, cv := a[at(ia, i)], c[at(ib, i)]
			dst[at(ib, i)] += gi * -quot(av/cv)
		}
	}
	fwd32 := func(dst []float32, in [][]float32) {
		a, c := in[0], in[1]
		parallel.Elems(len(dst), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				dst[i] = float32(f(float64(a[at(ia, i)]), float64(c[at(ib, i)])))
			}
		})
	}
	bwd32 := func(k int, dst []float32, in [][]float32, _, g []float32) bool {
		a, c := in[0], in[1]
		if k == 0 {
			gradTerms32(dst, ia, len(g), func(i int) float64 { return float64(g[i]) })
			return true
		}
		gradTerms32(dst, ib, len(g), func(i int) float64 {
			return float64(g[i]) * -quot(float64(a[at(ia, i)])/float64(c[at(ib, i)]))
		})
		return true
	}
	diff := []bool{!x.IsConst(), !y.IsConst()}
	r, err := b.FillingKernel32(n.GetName(), "Mod", []graph.Node{b.Node(x), b.Node(y)}, out, fwd, bwd, diff, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(r)}, nil
}
