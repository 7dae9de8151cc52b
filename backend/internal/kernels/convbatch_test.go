package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestConvBatchedPlanes checks that a convolution of small planes run over
// the whole batch at once (batchedPlanes) gives the forward pass (with
// bias) and both gradients of the per-sample products, in float64 to
// round-off and in float32 within a few ulps of the sums, with and without
// the forward pass's kept im2col matrix.
func TestConvBatchedPlanes(t *testing.T) {
	cases := []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"3x3_pad", []int{3, 5, 4, 6}, []int{7, 5, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"stride_dil", []int{4, 2, 11, 8}, []int{5, 2, 3, 2}, ConvParams{Strides: []int{2, 1}, Dilations: []int{2, 1}, Pads: []int{2, 0, 1, 1}}},
		{"odd_rows", []int{2, 3, 5, 5}, []int{13, 3, 2, 2}, ConvParams{}},
		// direct 1×1 (useBatchDirect): no im2col matrix kept, the input is its own
		{"pointwise", []int{4, 6, 2, 3}, []int{5, 6, 1, 1}, ConvParams{}},
		{"pointwise_1x1_plane", []int{3, 7, 1, 1}, []int{4, 7, 1, 1}, ConvParams{}},
		{"pointwise_2x2_plane", []int{4, 5, 2, 2}, []int{6, 5, 1, 1}, ConvParams{}},
	}
	saved, cacheTotal := batchPlaneMax, colCacheTotal
	defer func() { batchPlaneMax, colCacheTotal = saved, cacheTotal }()
	for _, c := range cases {
		for _, cache := range []bool{false, true} {
			name := c.name + "/recomputed"
			if cache {
				name = c.name + "/cached"
			}
			t.Run(name, func(t *testing.T) {
				g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
				if err != nil {
					t.Fatal(err)
				}
				colCacheTotal = 0
				if cache {
					colCacheTotal = cacheTotal
				}
				rng := rand.New(rand.NewSource(5))
				x, w := randTensor(rng, c.x...), randTensor(rng, c.w...)
				b := randTensor(rng, g.m)
				gy := randTensor(rng, g.n, g.m, g.oh, g.ow)
				run64 := func(max int) [3][]float64 {
					batchPlaneMax = max
					sc := newConvScratch()
					y := convForward(&g, sc, x, w, b, make([]float64, g.n*g.m*g.outPlane))
					if cache && max > 0 && !g.direct && !sc.cache.valid {
						t.Fatal("the batched forward pass did not keep its im2col matrix")
					}
					dx := convGradX(&g, sc, w, gy, make([]float64, g.n*g.c*g.inPlane))
					dw := convGradW[float64](g, sc, x, gy)
					return [3][]float64{data[float64](y), data[float64](dx), data[float64](dw)}
				}
				x32, w32, b32, gy32 := toF32(x), toF32(w), toF32(b), toF32(gy)
				run32 := func(max int) [3][]float32 {
					batchPlaneMax = max
					sc := newConvScratch()
					y := convForward(&g, sc, x32, w32, b32, make([]float32, g.n*g.m*g.outPlane))
					dx := convGradX(&g, sc, w32, gy32, make([]float32, g.n*g.c*g.inPlane))
					dw := convGradW[float32](g, sc, x32, gy32)
					return [3][]float32{data[float32](y), data[float32](dx), data[float32](dw)}
				}
				batchPlaneMax = 1 << 20
				if !batchedPlanes(&g) {
					t.Fatalf("%v: not run over the batch", g)
				}
				per, all := run64(0), run64(1<<20)
				per32, all32 := run32(0), run32(1<<20)
				for k, what := range []string{"Y", "dX", "dW"} {
					for i, want := range per[k] {
						if got := all[k][i]; math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
							t.Fatalf("float64 %s[%d]: batched %v, per sample %v", what, i, got, want)
						}
						got32, want32 := float64(all32[k][i]), float64(per32[k][i])
						if math.Abs(got32-want32) > 1e-5*(1+math.Abs(want)) {
							t.Fatalf("float32 %s[%d]: batched %v, per sample %v", what, i, got32, want32)
						}
					}
				}
			})
		}
	}
}

// TestConvGradWBatchedDirty checks that the weight gradient of a
// convolution run over the whole batch (batchedPlanes), which the Conv
// node writes into its buffer without zeroing it first (beta 0), gives
// through the node's DoInto on a NaN-filled buffer the bits of the product
// added into zeros (convGradWInto), in float32 and float64. The input has
// negative values and the output gradient whole zero rows (a dead
// channel), whose products are −0: their sums must still come out +0, as
// 0 + Σ gives.
func TestConvGradWBatchedDirty(t *testing.T) {
	xs, ws := []int{3, 5, 4, 6}, []int{7, 5, 3, 3}
	p := ConvParams{Pads: []int{1, 1, 1, 1}}
	g, err := newConvGeom(tensor.Shape(xs), tensor.Shape(ws), p)
	if err != nil {
		t.Fatal(err)
	}
	if !batchedPlanes(&g) {
		t.Fatal("the case does not run over the whole batch")
	}
	rng := rand.New(rand.NewSource(3))
	x, gy := randTensor(rng, xs...), randTensor(rng, g.n, g.m, g.oh, g.ow)
	xd, gyd := data[float64](x), data[float64](gy)
	for i := range xd[:len(xd)/2] {
		xd[i] = -math.Abs(xd[i])
	}
	for n := 0; n < g.n; n++ {
		clear(gyd[(n*g.m+2)*g.outPlane:][:g.outPlane]) // filter 2 gets no gradient
	}
	for _, f32 := range []bool{false, true} {
		gr := gorgonia.NewGraph()
		dt := tensor.Float64
		xv, gyv := x, gy
		if f32 {
			dt = tensor.Float32
			xv, gyv = toF32(x), toF32(gy)
		}
		xn := gorgonia.NewTensor(gr, dt, 4, gorgonia.WithShape(xs...), gorgonia.WithName("x"))
		wn := gorgonia.NewTensor(gr, dt, 4, gorgonia.WithShape(ws...), gorgonia.WithName("w"))
		y, err := Conv(xn, wn, nil, p)
		if err != nil {
			t.Fatal(err)
		}
		gyn := gorgonia.NewTensor(gr, dt, 4, gorgonia.WithShape(g.n, g.m, g.oh, g.ow), gorgonia.WithName("gy"))
		grads, err := y.Op().(*fnOp).SymDiff(gorgonia.Nodes{xn, wn}, y, gyn)
		if err != nil {
			t.Fatal(err)
		}
		dwOp := grads[1].Op().(*fnOp)
		n := g.m * g.colRows
		var got, want []float64
		if f32 {
			dirty := make([]float32, n)
			for i := range dirty {
				dirty[i] = float32(math.NaN())
			}
			v, _, err := dwOp.DoInto(dirty, xv, gyv)
			if err != nil {
				t.Fatal(err)
			}
			got = toF64(data[float32](v.(tensor.Tensor)))
			want = toF64(data[float32](convGradWInto(&g, newConvScratch(), xv, gyv, make([]float32, n))))
		} else {
			dirty := make([]float64, n)
			for i := range dirty {
				dirty[i] = math.NaN()
			}
			v, _, err := dwOp.DoInto(dirty, xv, gyv)
			if err != nil {
				t.Fatal(err)
			}
			got = data[float64](v.(tensor.Tensor))
			want = data[float64](convGradWInto(&g, newConvScratch(), xv, gyv, make([]float64, n)))
		}
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("float32 %v: dW[%d] = %v into a dirty buffer, %v added into zeros", f32, i, got[i], want[i])
			}
		}
	}
}

func toF64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// TestMovePlanes checks the batched products' plane moves for every
// length path (the loop of four, the short loop, copy), with strides on
// either side, against the definition; what lies between the runs stays.
func TestMovePlanes(t *testing.T) {
	for _, c := range []struct{ rows, inner, ldd, lds int }{
		{3, 4, 4, 12}, {3, 4, 9, 4}, {5, 1, 3, 1}, {2, 6, 6, 13}, {4, 15, 16, 15}, {3, 16, 40, 16}, {2, 33, 33, 70}, {0, 4, 4, 4},
	} {
		src := make([]float32, max(1, c.rows*c.lds))
		for i := range src {
			src[i] = float32(i + 1)
		}
		dst := make([]float32, max(1, c.rows*c.ldd))
		for i := range dst {
			dst[i] = -1
		}
		movePlanes(dst, c.ldd, src, c.lds, c.rows, c.inner)
		for i, v := range dst {
			r, e := i/c.ldd, i%c.ldd
			want := float32(-1)
			if r < c.rows && e < c.inner {
				want = src[r*c.lds+e]
			}
			if v != want {
				t.Errorf("%+v: dst[%d] = %v, expected %v", c, i, v, want)
				break
			}
		}
	}
}

// BenchmarkMovePlanes times the gather of a batched product's output
// gradient (gatherGrad, movePlanes) at the plane sizes of the batched
// layers of RegNetX and EfficientNet-B0 at 64×64, batch 4.
func BenchmarkMovePlanes(b *testing.B) {
	for _, c := range []struct{ n, m, p int }{{4, 400, 4}, {4, 1152, 4}, {4, 160, 16}, {4, 64, 64}} {
		g := &convGeom{n: c.n, m: c.m, outPlane: c.p}
		gy, dst := make([]float32, c.n*c.m*c.p), make([]float32, c.n*c.m*c.p)
		b.Run(fmt.Sprintf("%dx%dx%d", c.n, c.m, c.p), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				gatherGrad(g, gy, dst)
			}
		})
	}
}
