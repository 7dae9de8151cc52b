package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// TestPackedFiltersSameBits checks that the forward pass and the input
// gradient with the filters packed once per call (packedFor) give the
// bits of packing them for every product, on each path they take: im2col
// bands (several per sample), the whole-plane matrices kept for the
// weight gradient, 1×1 products, wide rows, zero-padded wide rows, the
// input gradient as a forward convolution and through col2im (stride 2),
// one sample (the parallel product), groups (group 0's filters packed,
// the others not); and the paths that do not pack once (large filters,
// small planes over the whole batch) unchanged.
func TestPackedFiltersSameBits(t *testing.T) {
	defer func(p bool) { usePackFilters = p }(usePackFilters)
	f32 := normals32(rand.New(rand.NewSource(5)))
	for _, c := range []struct {
		n, c, h, w, m, k, group, pad, stride int
	}{
		{4, 64, 64, 96, 64, 3, 1, 1, 1},   // bands of 1 MB, input gradient as a forward pass
		{2, 16, 40, 40, 24, 3, 1, 0, 1},   // wide rows
		{2, 16, 40, 40, 24, 3, 1, 1, 1},   // padded wide rows
		{1, 64, 40, 48, 64, 3, 1, 1, 1},   // one sample: the parallel product
		{4, 64, 40, 48, 96, 3, 1, 1, 2},   // stride 2: col2im input gradient
		{4, 128, 16, 24, 64, 3, 1, 1, 1},  // kept matrices
		{4, 256, 16, 24, 256, 3, 1, 1, 1}, // large filters, packed per product
		{4, 512, 4, 6, 512, 3, 1, 1, 1},   // whole batch at once
		{3, 64, 32, 48, 64, 1, 1, 0, 1},   // 1×1
		{2, 32, 20, 20, 48, 3, 2, 1, 1},   // two groups
	} {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			xs, ws := tensor.Shape{c.n, c.c, c.h, c.w}, tensor.Shape{c.m, c.c / c.group, c.k, c.k}
			g, err := newConvGeom(xs, ws, ConvParams{Pads: []int{c.pad, c.pad, c.pad, c.pad}, Group: c.group, Strides: []int{c.stride, c.stride}})
			if err != nil {
				t.Fatal(err)
			}
			x := newTensor(xs, f32(xs.TotalSize()))
			w := newTensor(ws, f32(ws.TotalSize()))
			b := newTensor(tensor.Shape{c.m}, f32(c.m))
			gy := newTensor(tensor.Shape{c.n, c.m, g.oh, g.ow}, f32(c.n*c.m*g.outPlane))
			run := func(on bool) (out, dx []float32) {
				usePackFilters = on
				out = make([]float32, c.n*c.m*g.outPlane)
				dx = make([]float32, xs.TotalSize())
				for i := range out {
					out[i] = float32(math.NaN())
				}
				convForward[float32](&g, newConvScratch(), x, w, b, out)
				convGradX[float32](&g, newConvScratch(), w, gy, dx)
				return out, dx
			}
			wantOut, wantDx := run(false)
			gotOut, gotDx := run(true)
			for _, p := range []struct {
				name      string
				got, want []float32
			}{{"output", gotOut, wantOut}, {"input gradient", gotDx, wantDx}} {
				for i := range p.want {
					if math.Float32bits(p.got[i]) != math.Float32bits(p.want[i]) {
						t.Fatalf("%s[%d] = %v with the filters packed once, %v packed per product", p.name, i, p.got[i], p.want[i])
					}
				}
			}
		})
	}
}
