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
	fwd := func(dst []float64, in [][]float64) {
		src := in[0]
		for o := 0; o < outer; o++ {
			for j := 0; j < inner; j++ {
				base := o*d*inner + j
				mx := math.Inf(-1)
				for k := 0; k < d; k++ {
					mx = math.Max(mx, src[base+k*inner])
				}
				s := 0.0
				for k := 0; k < d; k++ {
					s += math.Exp(src[base+k*inner] - mx)
				}
				ls := math.Log(s)
				for k := 0; k < d; k++ {
					z := src[base+k*inner] - mx - ls
					if logSm {
						dst[base+k*inner] = z
					} else {
						dst[base+k*inner] = math.Exp(z)
					}
				}
			}
		}
	}
	bwd := func(_ int, dst []float64, _ [][]float64, y, g []float64) {
		for o := 0; o < outer; o++ {
			for j := 0; j < inner; j++ {
				base := o*d*inner + j
				s := 0.0
				for k := 0; k < d; k++ {
					i := base + k*inner
					if logSm {
						s += g[i]
					} else {
						s += g[i] * y[i]
					}
				}
				for k := 0; k < d; k++ {
					i := base + k*inner
					if logSm {
						dst[i] = g[i] - math.Exp(y[i])*s
					} else {
						dst[i] = y[i] * (g[i] - s)
					}
				}
			}
		}
	}
	node, err := b.kernel(n.GetName(), n.GetOpType(), []gnode{b.node(x)}, x.shape, fwd, bwd, nil)
	if err != nil {
		return nil, err
	}
	return []*value{nodeValue(node)}, nil
}
