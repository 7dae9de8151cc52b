package backend

import (
	"fmt"
	"math"

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

func init() { register("Mod", 10, lowerMod) }

// floorMod is a − ⌊a/b⌋·b.
func floorMod(a, b float64) float64 {
	r := math.Mod(a, b)
	if r != 0 && (r < 0) != (b < 0) {
		r += b
	}
	return r
}

func lowerMod(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	y, err := input(n, in, 1)
	if err != nil {
		return nil, err
	}
	fmod, err := attrInt(n, "fmod", 0)
	if err != nil {
		return nil, err
	}
	if fmod != 0 && fmod != 1 {
		return nil, nodeErr(n, "fmod = %d, expected 0 or 1", fmod)
	}
	if x.isConst() && y.isConst() {
		return lowerFold(b, n, in)
	}
	out, err := shape.Broadcast(x.shape, y.shape)
	if err != nil {
		return nil, nodeErr(n, "inputs %q and %q: %v", n.Input[0], n.Input[1], err)
	}
	ia, ib := shape.NewBcast(x.shape, out), shape.NewBcast(y.shape, out)
	at := atB
	if isIntNode(x) || isIntNode(y) {
		v, err := b.intOp(n, "Mod", []*value{x, y}, out, func(dst []int64, in [][]int64) {
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
		return []*value{v}, nil
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
	diff := []bool{!x.isConst(), !y.isConst()}
	r, err := b.fillingKernel32(n.GetName(), "Mod", []gnode{b.node(x), b.node(y)}, out, fwd, bwd, diff, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	return []*value{nodeValue(r)}, nil
}
