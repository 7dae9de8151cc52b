package backend

import (
	"slices"

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

// FuseChannelShuffle enables that lowering; tests turn it off to compare.
var FuseChannelShuffle = true

// channelShuffle lowers Transpose(x, perm) with result shape out as the
// fused channel shuffle; ok is false where the pattern does not hold.
func (b *builder) channelShuffle(n *onnxpb.NodeProto, x *value, perm []int64, out []int) (*value, bool, error) {
	if !FuseChannelShuffle || x.n == nil {
		return nil, false, nil
	}
	r := len(x.shape)
	if r < 3 {
		return nil, false, nil
	}
	for i, p := range perm {
		want := int64(i)
		switch i {
		case 1:
			want = 2
		case 2:
			want = 1
		}
		if p != want {
			return nil, false, nil
		}
	}
	src, ok := b.reshapeOf[x.n]
	if !ok {
		return nil, false, nil
	}
	parts := b.channelParts[src]
	g, c := x.shape[1], x.shape[2]
	if len(parts) != g {
		return nil, false, nil
	}
	want := append([]int{x.shape[0], c}, x.shape[3:]...)
	for _, p := range parts {
		if !slices.Equal(p.Shape(), want) {
			return nil, false, nil
		}
	}
	planes, inner := x.shape[0]*c, numel(x.shape[3:])
	fwd := func(dst []float64, in [][]float64) { shuffleFwd(dst, in, planes, inner) }
	bwd := func(k int, dst []float64, _ [][]float64, _, grad []float64) {
		shuffleBwd(k, dst, grad, len(parts), planes, inner)
	}
	fwd32 := func(dst []float32, in [][]float32) { shuffleFwd(dst, in, planes, inner) }
	bwd32 := func(k int, dst []float32, _ [][]float32, _, grad []float32) bool {
		shuffleBwd32(k, dst, grad, len(parts), planes, inner)
		return true
	}
	y, err := b.fillingKernel32(n.GetName(), "ChannelShuffle", parts, out, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, true, err
	}
	reads := make([]bool, len(parts)+2)
	reads[len(parts)+1] = true // the output's gradient only
	y.Op().(*kernelOp).gradReads = reads
	return nodeValue(y), true, nil
}

// shuffleArgs is a shuffle's operands for forItems: the output (dst) and
// the parts (in), or a part's gradient (dst) and the output's (grad); g
// parts, each of planes planes of inner values, and k the part.
type shuffleArgs[T float32 | float64] struct {
	dst, grad   []T
	in          [][]T
	g, inner, k int
}

// shuffleFwd writes y[p, g] = in[g][p] for each of the planes planes p
// (inner values each), split over the cores by planes.
func shuffleFwd[T float32 | float64](dst []T, in [][]T, planes, inner int) {
	g := len(in)
	forItems(planes, g*inner, shuffleArgs[T]{dst: dst, in: in, g: g, inner: inner}, func(a shuffleArgs[T], lo, hi int) {
		for p := lo; p < hi; p++ {
			for k, src := range a.in {
				copy(a.dst[(p*a.g+k)*a.inner:][:a.inner], src[p*a.inner:])
			}
		}
	})
}

// shuffleBwd writes part k's gradient, dst[p] = 0 + grad[p, k] for each
// of the planes planes p of the g parts.
func shuffleBwd[T float32 | float64](k int, dst, grad []T, g, planes, inner int) {
	forItems(planes, inner, shuffleArgs[T]{dst: dst, grad: grad, g: g, inner: inner, k: k}, func(a shuffleArgs[T], lo, hi int) {
		for p := lo; p < hi; p++ {
			d := a.dst[p*a.inner:][:a.inner]
			for i, v := range a.grad[(p*a.g+a.k)*a.inner:][:a.inner] {
				d[i] = 0 + v
			}
		}
	})
}

// shuffleBwd32 is shuffleBwd in float32: planes of 16 values and more
// through vmath.PlusZero32's vector kernel, smaller ones (ShuffleNet's
// 4×4 and 2×2 planes at 64×64) in one loop without a call per plane.
func shuffleBwd32(k int, dst, grad []float32, g, planes, inner int) {
	forItems(planes, inner, shuffleArgs[float32]{dst: dst, grad: grad, g: g, inner: inner, k: k}, func(a shuffleArgs[float32], lo, hi int) {
		if a.inner >= 16 {
			for p := lo; p < hi; p++ {
				vmath.PlusZero32(a.dst[p*a.inner:][:a.inner], a.grad[(p*a.g+a.k)*a.inner:])
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
