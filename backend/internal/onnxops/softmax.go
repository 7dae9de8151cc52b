package onnxops

import (
	"math"
	"sync"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/backend/internal/vmath"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Softmax and LogSoftmax. Before opset 13 the input is coerced to 2-D at
// axis (default 1) and normalised over the flattened trailing dimensions;
// from 13 on the op normalises along the single axis (default -1).
//
// Hardmax: 1 at the first maximum, 0 elsewhere, along the same axes as
// Softmax at the same opset. Its gradient is zero.

func init() {
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		graph.Register(op, 1, lowerSoftmax)
		graph.Register(op, 13, lowerSoftmax)
	}
	graph.Register("Hardmax", 1, lowerHardmax)
	graph.Register("Hardmax", 13, lowerHardmax)
}

// softmaxSplit reads the axis of a Softmax-like node (default 1 before
// opset 13, -1 from 13 on) and splits x's shape into outer × d × inner,
// d being the extent worked along: the axis, or before opset 13 the
// flattened trailing dimensions from the axis on (inner is then 1).
func softmaxSplit(b *graph.Builder, n *onnxpb.NodeProto, x *graph.Value) (outer, d, inner int, err error) {
	def := int64(-1)
	if b.Opset < 13 {
		def = 1
	}
	ax, err := graph.AttrInt(n, "axis", def)
	if err != nil {
		return 0, 0, 0, err
	}
	r := len(x.Shape)
	if r == 0 {
		return 0, 0, 0, graph.NodeErr(n, "input %q is a scalar; expected rank >= 1 (opset %d)", n.Input[0], b.Opset)
	}
	a, err := graph.NormAxis(n, ax, r)
	if err != nil {
		return 0, 0, 0, err
	}
	outer, d, inner = shape.Numel(x.Shape[:a]), x.Shape[a], shape.Numel(x.Shape[a+1:])
	if b.Opset < 13 {
		d, inner = shape.Numel(x.Shape[a:]), 1
	}
	return outer, d, inner, nil
}

func lowerSoftmax(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
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
	node, err := b.FillingKernel32(n.GetName(), n.GetOpType(), []graph.Node{b.Node(x)}, x.Shape, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(node)}, nil
}

// softmaxBlock is how many vectors (consecutive along inner) the softmax
// kernels work on at once: each pass over the d positions then reads and
// writes runs of consecutive elements, and the exponentials of a position
// are computed for the whole block by one exp64 call.
const softmaxBlock = 256

// softmaxBlocks calls f for every run [j0, j1) of at most softmaxBlock
// consecutive vectors j of one outer index o, the outer·inner vectors split
// among goroutines.
func softmaxBlocks(outer, d, inner int, f func(o, j0, j1 int, t *softmaxTemp)) {
	per := (inner + softmaxBlock - 1) / softmaxBlock
	parallel.Items(outer*per, d*min(inner, softmaxBlock), func(lo, hi int) {
		t := softmaxTemps.Get().(*softmaxTemp)
		defer softmaxTemps.Put(t)
		for it := lo; it < hi; it++ {
			o, b := it/per, it%per
			j0 := b * softmaxBlock
			f(o, j0, min(j0+softmaxBlock, inner), t)
		}
	})
}

// softmaxTemp holds a block's per-vector values and exponentials. Every
// use writes a value before reading it.
type softmaxTemp struct {
	mx, s, v, e [softmaxBlock]float64
}

// softmaxTemps lends softmaxTemps to the goroutines of softmaxBlocks: a
// fresh one per call was 8 KB of garbage per Softmax and its gradient (a
// sixth of the bytes a ViT step allocated, collected every few steps).
var softmaxTemps = sync.Pool{New: func() any { return new(softmaxTemp) }}

// softmaxForward writes (Log)Softmax of src along d (outer × d × inner)
// into dst, in float64 whatever T is (a float32 result is rounded once),
// the outer·inner vectors split among goroutines. Each vector's maximum,
// sum of exponentials and results are those of the one-vector formula:
// the sum runs over k in order, with math.Exp's values (exp64).
func softmaxForward[T graph.Float](dst, src []T, outer, d, inner int, logSm bool) {
	if inner == 1 {
		softmaxRowsForward(dst, src, outer, d, logSm)
		return
	}
	softmaxBlocks(outer, d, inner, func(o, j0, j1 int, t *softmaxTemp) {
		n := j1 - j0
		mx, s, v, e := t.mx[:n], t.s[:n], t.v[:n], t.e[:n]
		row := func(k int) int { return (o*d+k)*inner + j0 }
		for b := range mx {
			mx[b] = math.Inf(-1)
			s[b] = 0
		}
		for k := 0; k < d; k++ {
			x := src[row(k):][:n]
			for b, xv := range x {
				mx[b] = math.Max(mx[b], float64(xv))
			}
		}
		for k := 0; k < d; k++ {
			x := src[row(k):][:n]
			for b, xv := range x {
				v[b] = float64(xv) - mx[b]
			}
			exp64(e, v)
			for b := range s {
				s[b] += e[b]
			}
		}
		for b := range s {
			s[b] = math.Log(s[b]) // ls
		}
		for k := 0; k < d; k++ {
			x, y := src[row(k):][:n], dst[row(k):][:n]
			for b, xv := range x {
				v[b] = float64(xv) - mx[b] - s[b]
			}
			if logSm {
				for b, z := range v {
					y[b] = T(z)
				}
				continue
			}
			exp64(e, v)
			for b, z := range e {
				y[b] = T(z)
			}
		}
	})
}

// softmaxBackward writes the gradient of (Log)Softmax with output y and
// incoming gradient g into dst, as softmaxForward computes.
func softmaxBackward[T graph.Float](dst, y, g []T, outer, d, inner int, logSm bool) {
	if inner == 1 {
		softmaxRowsBackward(dst, y, g, outer, d, logSm)
		return
	}
	softmaxBlocks(outer, d, inner, func(o, j0, j1 int, t *softmaxTemp) {
		n := j1 - j0
		s, v, e := t.s[:n], t.v[:n], t.e[:n]
		row := func(k int) int { return (o*d+k)*inner + j0 }
		clear(s)
		for k := 0; k < d; k++ {
			gk, yk := g[row(k):][:n], y[row(k):][:n]
			for b, gv := range gk {
				if logSm {
					s[b] += float64(gv)
				} else {
					s[b] += float64(gv) * float64(yk[b])
				}
			}
		}
		for k := 0; k < d; k++ {
			gk, yk, dk := g[row(k):][:n], y[row(k):][:n], dst[row(k):][:n]
			if logSm {
				for b, yv := range yk {
					v[b] = float64(yv)
				}
				exp64(e, v)
				for b, gv := range gk {
					dk[b] = T(float64(gv) - e[b]*s[b])
				}
				continue
			}
			for b, gv := range gk {
				dk[b] = T(float64(yk[b]) * (float64(gv) - s[b]))
			}
		}
	})
}

// softmaxRowsForward is softmaxForward along the last axis (inner = 1,
// the attention scores' softmax): a vector is a contiguous row, whose
// exponentials are computed softmaxBlock at a time by one exp64 call
// rather than one call per element, the rows split among goroutines. The
// maximum, the sum (over k in order) and every result are the same
// operations in the same order as softmaxForward's, so the same bits.
func softmaxRowsForward[T graph.Float](dst, src []T, outer, d int, logSm bool) {
	parallel.Items(outer, d, func(lo, hi int) {
		t := softmaxTemps.Get().(*softmaxTemp)
		defer softmaxTemps.Put(t)
		for o := lo; o < hi; o++ {
			x, y := src[o*d:][:d], dst[o*d:][:d]
			mx := math.Inf(-1)
			for _, xv := range x {
				mx = max64(mx, float64(xv))
			}
			s := 0.0
			for k0 := 0; k0 < d; k0 += softmaxBlock {
				xs := x[k0:min(d, k0+softmaxBlock)]
				v, e := t.v[:len(xs)], t.e[:len(xs)]
				for i, xv := range xs {
					v[i] = float64(xv) - mx
				}
				exp64(e, v)
				for _, ev := range e {
					s += ev
				}
			}
			ls := math.Log(s)
			for k0 := 0; k0 < d; k0 += softmaxBlock {
				k1 := min(d, k0+softmaxBlock)
				xs, ys := x[k0:k1], y[k0:k1]
				v, e := t.v[:len(xs)], t.e[:len(xs)]
				for i, xv := range xs {
					v[i] = float64(xv) - mx - ls
				}
				if logSm {
					for i, z := range v {
						ys[i] = T(z)
					}
					continue
				}
				exp64(e, v)
				for i, z := range e {
					ys[i] = T(z)
				}
			}
		}
	})
}

// max64 is math.Max(a, b), inlined where a and b are ordered and differ
// (math.Max is a call, one per score): ties, signed zeros, NaN and the
// infinities go to math.Max.
func max64(a, b float64) float64 {
	switch {
	case a > b:
		return a
	case b > a:
		return b
	}
	return math.Max(a, b)
}

// softmaxRowsBackward is softmaxBackward along the last axis (inner = 1),
// row by row as softmaxRowsForward: the same sums in the same order.
func softmaxRowsBackward[T graph.Float](dst, y, g []T, outer, d int, logSm bool) {
	parallel.Items(outer, d, func(lo, hi int) {
		t := softmaxTemps.Get().(*softmaxTemp)
		defer softmaxTemps.Put(t)
		for o := lo; o < hi; o++ {
			gr, yr, dr := g[o*d:][:d], y[o*d:][:d], dst[o*d:][:d]
			s := 0.0
			if logSm {
				for _, gv := range gr {
					s += float64(gv)
				}
				for k0 := 0; k0 < d; k0 += softmaxBlock {
					k1 := min(d, k0+softmaxBlock)
					v, e := t.v[:k1-k0], t.e[:k1-k0]
					for i, yv := range yr[k0:k1] {
						v[i] = float64(yv)
					}
					exp64(e, v)
					for i, gv := range gr[k0:k1] {
						dr[k0+i] = T(float64(gv) - e[i]*s)
					}
				}
				continue
			}
			for k, gv := range gr {
				s += float64(gv) * float64(yr[k])
			}
			for k, gv := range gr {
				dr[k] = T(float64(yr[k]) * (float64(gv) - s))
			}
		}
	})
}

// exp64 sets dst[i] = math.Exp(x[i]) for i < len(x), bit for bit, with the
// vector kernels of vmath.Exp64 where the CPU has them.
func exp64(dst, x []float64) { vmath.Exp64(dst[:len(x)], x) }

func lowerHardmax(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	outer, d, inner, err := softmaxSplit(b, n, x)
	if err != nil {
		return nil, err
	}
	fwd := func(dst []float64, in [][]float64) {
		src := in[0]
		for o := 0; o < outer; o++ {
			for j := 0; j < inner; j++ {
				bi := 0
				for k := 1; k < d; k++ {
					if src[(o*d+k)*inner+j] > src[(o*d+bi)*inner+j] {
						bi = k
					}
				}
				if d > 0 {
					dst[(o*d+bi)*inner+j] = 1
				}
			}
		}
	}
	bwd := func(int, []float64, [][]float64, []float64, []float64) {} // zero
	node, err := b.Kernel(n.GetName(), "Hardmax", []graph.Node{b.Node(x)}, x.Shape, fwd, bwd, nil)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(node)}, nil
}
