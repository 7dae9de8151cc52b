package onnxops

import (
	"slices"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/rewrite"

	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/backend/internal/vmath"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// The channel shuffle of ShuffleNet as exported from torchvision: the G
// branches' outputs p_0 … p_{G−1}, each [N, C, rest…], are concatenated
// along the channels, reshaped to [N, G, C, rest…] and transposed by (0,
// 2, 1, 3, …) to [N, C, G, rest…]: y[n, c, g] = p_g[n, c], a plane of
// rest… at a time. Where a Transpose has that shape, reads a plain
// Reshape and that one a Concat along axis 1 of G parts of C channels
// each, the Transpose is lowered to one kernel over the parts: each plane
// is copied once, from its part to its place (the Concat and the
// Reshape are then not formed unless something else reads them), and
// each part's gradient is gathered from the output's gradient plane by
// plane (0 + g, as the Transpose's gradient gives; the Concat's and the
// Reshape's are copies). The values and gradients are the unfused ops',
// bit for bit.

func init() {
	graph.RegisterFused(rewrite.ChannelShuffle, lowerFusedShuffle)
	graph.RegisterFused(rewrite.ShuffleSlice, lowerFusedShuffleSlice)
}

// lowerFusedShuffle lowers a fused ChannelShuffle (rewrite.ChannelShuffle:
// a Transpose of x, a Reshape of the Concat c of the parts) as one kernel
// over the parts where the pattern holds with the values' shapes: x a
// float value computed at run time, [N, G, C, rest…], a plain copy of c's
// node; c a Concat kernel along axis 1 of G parts [N, C, rest…]. It
// lowers the Transpose otherwise.
func lowerFusedShuffle(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, c, parts := in[0], in[1], in[2:]
	if x == nil || c == nil || x.IsConst() || graph.IsIntNode(x) || x.N == nil || c.N == nil || len(x.Shape) < 3 {
		return b.LowerFallback(n, in)
	}
	perm, err := graph.AttrInts(n, "perm", nil)
	if err != nil || len(perm) != len(x.Shape) {
		return b.LowerFallback(n, in)
	}
	if b.PlainCopyOf(x.N) != c.N || !concatOfChannels(c, rewrite.AttrInt(n, rewrite.AttrConcatAxis, 0)) {
		return b.LowerFallback(n, in)
	}
	g, ch := x.Shape[1], x.Shape[2]
	if len(parts) != g {
		return b.LowerFallback(n, in)
	}
	want := append([]int{x.Shape[0], ch}, x.Shape[3:]...)
	nodes := make([]graph.Node, len(parts))
	for i, p := range parts {
		if p == nil || !slices.Equal(p.Shape, want) {
			return b.LowerFallback(n, in)
		}
		nodes[i] = b.Node(p)
	}
	out := make([]int, len(perm))
	for i, p := range perm {
		out[i] = x.Shape[p]
	}
	planes, inner := x.Shape[0]*ch, shape.Numel(x.Shape[3:])
	fwd := func(dst []float64, in [][]float64) { shuffleFwd(dst, in, planes, inner) }
	bwd := func(k int, dst []float64, _ [][]float64, _, grad []float64) {
		shuffleBwd(k, dst, grad, len(nodes), planes, inner, nil)
	}
	fwd32 := func(dst []float32, in [][]float32) { shuffleFwd(dst, in, planes, inner) }
	bwd32 := func(k int, dst []float32, _ [][]float32, _, grad []float32) bool {
		shuffleBwd(k, dst, grad, len(nodes), planes, inner, vmath.PlusZero32)
		return true
	}
	y, err := b.FillingKernel32(n.GetName(), "ChannelShuffle", nodes, out, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	reads := make([]bool, len(nodes)+2)
	reads[len(nodes)+1] = true // the output's gradient only
	y.Op().(*graph.KernelOp).GradReads = reads
	return []*graph.Value{graph.NodeValue(y)}, nil
}

// concatOfChannels reports whether c is the result of a Concat kernel
// along axis 1 (axis as the Concat's attribute gives it).
func concatOfChannels(c *graph.Value, axis int64) bool {
	if axis < 0 {
		axis += int64(len(c.Shape))
	}
	return axis == 1 && !c.IsConst() && !graph.IsIntNode(c) && graph.KindOf(c.N) == "Concat"
}

// shuffleGeom is a fused channel shuffle's operands and geometry: its g =
// len(parts) parts of n samples of c planes of inner values each; the
// shuffled channel j of a sample is plane j/g of part j%g.
type shuffleGeom struct {
	parts       []graph.Node
	n, c, inner int
}

// lowerFusedShuffleSlice lowers a fused ShuffleSlice (rewrite.ShuffleSlice:
// a Slice of a Reshape of a channel shuffle) as one kernel over the
// shuffle's parts where the shuffle was fused (the shuffle's value a
// ChannelShuffle kernel, [N, C, G, rest…]), the Slice's input is that
// value under the shape [N, G·C, rest…], and the Slice takes channels
// [c0, c1) and every element of the other axes: each plane is copied
// once, from its part to the slice (a ShuffleNet block's two halves, the
// shuffle then not formed unless something else reads it); the gradient
// of a part is 0 + g on the planes the slice took, +0 on the others, as
// the unfused Slice's (zeros, then 0 + g) and the shuffle's (0 + that)
// give bit for bit. It lowers the Slice otherwise.
func lowerFusedShuffleSlice(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	k := len(rewrite.Fallback(n).Input)
	t, parts := in[k], in[k+1:]
	x, first, step, out, err := sliceGeometry(b, rewrite.Fallback(n), in[:k])
	if err != nil || t == nil || x.N == nil || t.N == nil || graph.KindOf(t.N) != "ChannelShuffle" || b.PlainCopyOf(x.N) != t.N || len(t.Shape) < 3 {
		return b.LowerFallback(n, in)
	}
	sg := &shuffleGeom{n: t.Shape[0], c: t.Shape[1], inner: shape.Numel(t.Shape[3:])}
	if len(parts) != t.Shape[2] {
		return b.LowerFallback(n, in)
	}
	for _, p := range parts {
		if p == nil {
			return b.LowerFallback(n, in)
		}
		sg.parts = append(sg.parts, b.Node(p))
	}
	if len(x.Shape) < 2 || x.Shape[0] != sg.n || x.Shape[1] != len(sg.parts)*sg.c || shape.Numel(x.Shape[2:]) != sg.inner {
		return b.LowerFallback(n, in)
	}
	for d := range x.Shape {
		if step[d] != 1 || d != 1 && (first[d] != 0 || out[d] != x.Shape[d]) {
			return b.LowerFallback(n, in)
		}
	}
	c0, c1 := first[1], first[1]+out[1]
	fwd := func(dst []float64, in [][]float64) { shuffleSliceFwd(dst, in, sg, c0, c1) }
	bwd := func(k int, dst []float64, _ [][]float64, _, grad []float64) {
		shuffleSliceBwd(k, dst, grad, sg, c0, c1, nil)
	}
	fwd32 := func(dst []float32, in [][]float32) { shuffleSliceFwd(dst, in, sg, c0, c1) }
	bwd32 := func(k int, dst []float32, _ [][]float32, _, grad []float32) bool {
		shuffleSliceBwd(k, dst, grad, sg, c0, c1, vmath.PlusZero32)
		return true
	}
	y, err := b.FillingKernel32(n.GetName(), "ShuffleSlice", sg.parts, out, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	reads := make([]bool, len(sg.parts)+2)
	reads[len(sg.parts)+1] = true // the output's gradient only
	y.Op().(*graph.KernelOp).GradReads = reads
	return []*graph.Value{graph.NodeValue(y)}, nil
}

// sliceArgs is a shuffle slice's operands for parallel.ForItems: the slice (dst)
// and the parts (in), or a part's gradient (dst) and the slice's (grad);
// k the part, [c0, c1) the shuffled channels the slice takes, wide the
// gradient's copy of a wide plane.
type sliceArgs[T float32 | float64] struct {
	dst, grad []T
	in        [][]T
	sg        *shuffleGeom
	k, c0, c1 int
	wide      func(d, s []T)
}

// shuffleSliceFwd writes the slice's planes, sample by sample: plane j −
// c0 is plane j/g of part j%g, for j in [c0, c1). The part and its plane
// advance with j (no division per plane: ShuffleNet's planes at 64×64
// are 4 to 64 values).
func shuffleSliceFwd[T float32 | float64](dst []T, in [][]T, sg *shuffleGeom, c0, c1 int) {
	a, n := sliceArgs[T]{dst: dst, in: in, sg: sg, c0: c0, c1: c1}, sg.n*(c1-c0)
	if parallel.OneChunk(n, sg.inner) { // no func value (parallel.OneChunk)
		shuffleSliceFwdItems(a, 0, n)
		return
	}
	parallel.ForItems(n, sg.inner, a, shuffleSliceFwdItems[T])
}

// shuffleSliceFwdItems writes the slice's planes [lo, hi).
func shuffleSliceFwdItems[T float32 | float64](a sliceArgs[T], lo, hi int) {
	g, c, inner, w := len(a.in), a.sg.c, a.sg.inner, a.c1-a.c0
	s, j := lo/w, a.c0+lo%w
	k, p := j%g, j/g
	for q := lo; q < hi; q++ {
		d, src := a.dst[q*inner:][:inner], a.in[k][(s*c+p)*inner:][:inner]
		if inner < 16 {
			for i, v := range src {
				d[i] = v
			}
		} else {
			copy(d, src)
		}
		if j++; j == a.c1 { // the next sample
			s, j = s+1, a.c0
			k, p = j%g, j/g
		} else if k++; k == g {
			k, p = 0, p+1
		}
	}
}

// partPlanes is the range [lo, hi) of part k's planes whose shuffled
// channels g·p + k lie in [c0, c1).
func partPlanes(k, g, c0, c1 int) (lo, hi int) {
	lo = (max(c0-k, 0) + g - 1) / g
	hi = (max(c1-k, 0) + g - 1) / g
	return lo, max(lo, hi)
}

// shuffleSliceBwd writes part k's gradient: 0 + the slice's gradient on
// the planes it took, +0 on the others. wide, if not nil, copies planes
// of 16 values and more (vmath.PlusZero32 in float32); smaller ones take
// the loop, without a call per plane.
func shuffleSliceBwd[T float32 | float64](k int, dst, grad []T, sg *shuffleGeom, c0, c1 int, wide func(d, s []T)) {
	if sg.inner < 16 {
		wide = nil
	}
	a := sliceArgs[T]{dst: dst, grad: grad, sg: sg, k: k, c0: c0, c1: c1, wide: wide}
	if parallel.OneChunk(sg.n, sg.c*sg.inner) { // no func value (parallel.OneChunk)
		shuffleSliceBwdSamples(a, 0, sg.n)
		return
	}
	parallel.ForItems(sg.n, sg.c*sg.inner, a, shuffleSliceBwdSamples[T])
}

// shuffleSliceBwdSamples writes samples [s0, s1) of part a.k's gradient.
func shuffleSliceBwdSamples[T float32 | float64](a sliceArgs[T], s0, s1 int) {
	g, c, inner, w := len(a.sg.parts), a.sg.c, a.sg.inner, a.c1-a.c0
	lo, hi := partPlanes(a.k, g, a.c0, a.c1)
	for s := s0; s < s1; s++ {
		d := a.dst[s*c*inner:][:c*inner]
		clear(d[:lo*inner])
		clear(d[hi*inner:])
		for p := lo; p < hi; p++ {
			src := a.grad[(s*w+g*p+a.k-a.c0)*inner:][:inner]
			dp := d[p*inner:][:inner]
			if a.wide != nil {
				a.wide(dp, src)
				continue
			}
			for i, v := range src {
				dp[i] = 0 + v
			}
		}
	}
}

// shuffleArgs is a shuffle's operands for parallel.ForItems: the output (dst) and
// the parts (in), or a part's gradient (dst) and the output's (grad); g
// parts, each of planes planes of inner values, k the part and wide the
// gradient's copy of a wide plane.
type shuffleArgs[T float32 | float64] struct {
	dst, grad   []T
	in          [][]T
	g, inner, k int
	wide        func(d, s []T)
}

// shuffleFwd writes y[p, g] = in[g][p] for each of the planes planes p
// (inner values each), split over the cores by planes.
func shuffleFwd[T float32 | float64](dst []T, in [][]T, planes, inner int) {
	g := len(in)
	parallel.ForItems(planes, g*inner, shuffleArgs[T]{dst: dst, in: in, g: g, inner: inner}, func(a shuffleArgs[T], lo, hi int) {
		for p := lo; p < hi; p++ {
			for k, src := range a.in {
				copy(a.dst[(p*a.g+k)*a.inner:][:a.inner], src[p*a.inner:])
			}
		}
	})
}

// shuffleBwd writes part k's gradient, dst[p] = 0 + grad[p, k] for each
// of the planes planes p of the g parts. wide, if not nil, copies planes
// of 16 values and more (vmath.PlusZero32 in float32); smaller ones
// (ShuffleNet's 4×4 and 2×2 planes at 64×64) take one loop without a call
// per plane.
func shuffleBwd[T float32 | float64](k int, dst, grad []T, g, planes, inner int, wide func(d, s []T)) {
	if inner < 16 {
		wide = nil
	}
	parallel.ForItems(planes, inner, shuffleArgs[T]{dst: dst, grad: grad, g: g, inner: inner, k: k, wide: wide}, func(a shuffleArgs[T], lo, hi int) {
		if a.wide != nil {
			for p := lo; p < hi; p++ {
				a.wide(a.dst[p*a.inner:][:a.inner], a.grad[(p*a.g+a.k)*a.inner:])
			}
			return
		}
		d := a.dst[lo*a.inner : hi*a.inner]
		j, step := (lo*a.g+a.k)*a.inner, (a.g-1)*a.inner
		for i := 0; i < len(d); i += a.inner {
			for e, v := range a.grad[j : j+a.inner] {
				d[i+e] = 0 + v
			}
			j += a.inner + step
		}
	})
}
