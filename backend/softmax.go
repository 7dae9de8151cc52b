package backend

import (
	"math"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Softmax and LogSoftmax. Before opset 13 the input is coerced to 2-D at
// axis (default 1) and normalised over the flattened trailing dimensions;
// from 13 on the op normalises along the single axis (default -1).

func init() {
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		register(op, 1, lowerSoftmax)
		register(op, 13, lowerSoftmax)
	}
}

// softmaxSplit reads the axis of a Softmax-like node (default 1 before
// opset 13, -1 from 13 on) and splits x's shape into outer × d × inner,
// d being the extent worked along: the axis, or before opset 13 the
// flattened trailing dimensions from the axis on (inner is then 1).
func softmaxSplit(b *builder, n *onnxpb.NodeProto, x *value) (outer, d, inner int, err error) {
	def := int64(-1)
	if b.opset < 13 {
		def = 1
	}
	ax, err := attrInt(n, "axis", def)
	if err != nil {
		return 0, 0, 0, err
	}
	r := len(x.shape)
	if r == 0 {
		return 0, 0, 0, nodeErr(n, "input %q is a scalar; expected rank >= 1 (opset %d)", n.Input[0], b.opset)
	}
	a, err := normAxis(n, ax, r)
	if err != nil {
		return 0, 0, 0, err
	}
	outer, d, inner = numel(x.shape[:a]), x.shape[a], numel(x.shape[a+1:])
	if b.opset < 13 {
		d, inner = numel(x.shape[a:]), 1
	}
	return outer, d, inner, nil
}

func lowerSoftmax(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	outer, d, inner, err := softmaxSplit(b, n, x)
	if err != nil {
		return nil, err
	}
	logSm := n.GetOpType() == "LogSoftmax"
	fwd := func(dst []float64, in [][]float64) { softmaxForward(dst, in[0], outer, d, inner, logSm) }
	bwd := func(_ int, dst []float64, _ [][]float64, y, g []float64) {
		softmaxBackward(dst, y, g, outer, d, inner, logSm)
	}
	fwd32 := func(dst []float32, in [][]float32) { softmaxForward(dst, in[0], outer, d, inner, logSm) }
	bwd32 := func(_ int, dst []float32, _ [][]float32, y, g []float32) bool {
		softmaxBackward(dst, y, g, outer, d, inner, logSm)
		return true
	}
	node, err := b.fillingKernel32(n.GetName(), n.GetOpType(), []gnode{b.node(x)}, x.shape, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	return []*value{nodeValue(node)}, nil
}

// float is the element type of a kernel's data.
type float interface{ ~float32 | ~float64 }

// softmaxForward writes (Log)Softmax of src along d (outer × d × inner)
// into dst, in float64 whatever T is (a float32 result is rounded once),
// the outer·inner vectors split among goroutines.
func softmaxForward[T float](dst, src []T, outer, d, inner int, logSm bool) {
	parallelItems(outer*inner, d, func(lo, hi int) {
		for it := lo; it < hi; it++ {
			base := (it/inner)*d*inner + it%inner
			mx := math.Inf(-1)
			for k := 0; k < d; k++ {
				mx = math.Max(mx, float64(src[base+k*inner]))
			}
			s := 0.0
			for k := 0; k < d; k++ {
				s += math.Exp(float64(src[base+k*inner]) - mx)
			}
			ls := math.Log(s)
			for k := 0; k < d; k++ {
				z := float64(src[base+k*inner]) - mx - ls
				if logSm {
					dst[base+k*inner] = T(z)
				} else {
					dst[base+k*inner] = T(math.Exp(z))
				}
			}
		}
	})
}

// softmaxBackward writes the gradient of (Log)Softmax with output y and
// incoming gradient g into dst, as softmaxForward computes.
func softmaxBackward[T float](dst, y, g []T, outer, d, inner int, logSm bool) {
	parallelItems(outer*inner, d, func(lo, hi int) {
		for it := lo; it < hi; it++ {
			base := (it/inner)*d*inner + it%inner
			s := 0.0
			for k := 0; k < d; k++ {
				i := base + k*inner
				if logSm {
					s += float64(g[i])
				} else {
					s += float64(g[i]) * float64(y[i])
				}
			}
			for k := 0; k < d; k++ {
				i := base + k*inner
				if logSm {
					dst[i] = T(float64(g[i]) - math.Exp(float64(y[i]))*s)
				} else {
					dst[i] = T(float64(y[i]) * (float64(g[i]) - s))
				}
			}
		}
	})
}
