package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestWinogradMatchesIm2col checks the Winograd forward pass, input
// gradient and weight gradient against the im2col paths (Winograd off):
// in float64 to 1e-12 of the values' scale, in float32 to 2e-6; on odd and
// even planes (partial tiles on the right and bottom edges), several
// samples, a bias, chunks of tiles within a tile row and across rows and
// samples, taken by one worker each (enough of them) or shared by all,
// and dirty output buffers.
func TestWinogradMatchesIm2col(t *testing.T) {
	winoAlways(t)
	defer func(tiles, block, chunk int) {
		winoMinTiles, winoBlockElems, winoChunkElems = tiles, block, chunk
	}(winoMinTiles, winoBlockElems, winoChunkElems)
	cases := []struct {
		n, c, m, h, w int
		tiles         int // tiles a chunk
	}{
		{1, 1, 1, 2, 2, 32},
		{2, 3, 4, 7, 9, 32},  // one chunk, shared
		{2, 3, 4, 7, 9, 3},   // 14 chunks across rows and samples, one worker each
		{2, 3, 4, 7, 9, 13},  // 4 chunks
		{3, 5, 2, 1, 5, 2},   // one-row planes
		{1, 4, 6, 12, 10, 7}, // 30 tiles: 5 chunks
		{2, 8, 8, 16, 24, 32},
		{4, 16, 8, 4, 6, 32},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("n%d_c%d_m%d_%dx%d_tiles%d", c.n, c.c, c.m, c.h, c.w, c.tiles), func(t *testing.T) {
			winoMinTiles, winoBlockElems, winoChunkElems = c.tiles, 0, 0
			xs, ws := tensor.Shape{c.n, c.c, c.h, c.w}, tensor.Shape{c.m, c.c, 3, 3}
			g, err := newConvGeom(xs, ws, ConvParams{Pads: []int{1, 1, 1, 1}})
			if err != nil {
				t.Fatal(err)
			}
			useWinograd = true
			if !winogradOK(&g) {
				t.Fatalf("%v: Winograd does not apply", g)
			}
			rng := rand.New(rand.NewSource(3))
			x, w, b := randTensor(rng, c.n, c.c, c.h, c.w), randTensor(rng, c.m, c.c, 3, 3), randTensor(rng, c.m)
			gy := randTensor(rng, c.n, c.m, c.h, c.w)
			checkWinograd(t, g, x, w, b, gy, 1e-12)
			checkWinograd(t, g, toF32(x), toF32(w), toF32(b), toF32(gy), 2e-6)
		})
	}
}

// checkWinograd runs g's three passes with Winograd on (into buffers
// holding NaN: every element must be written, or added into zeros) and
// off, and compares them to tol of each result's largest magnitude.
func checkWinograd(t *testing.T, g convGeom, x, w, b, gy *tensor.Dense, tol float64) {
	t.Helper()
	dirty := func(n int) any {
		if x.Dtype() == tensor.Float32 {
			d := make([]float32, n)
			for i := range d {
				d[i] = float32(math.NaN())
			}
			return d
		}
		d := make([]float64, n)
		for i := range d {
			d[i] = math.NaN()
		}
		return d
	}
	run := func() (y, dx, dw tensor.Tensor) {
		ny, nx, nw := g.n*g.m*g.outPlane, g.n*g.c*g.inPlane, g.m*g.colRows
		if x.Dtype() == tensor.Float32 {
			y = convForward(&g, newConvScratch(), x, w, b, dirty(ny).([]float32))
			dx = convGradX(&g, newConvScratch(), w, gy, dirty(nx).([]float32))
			dw = convGradWInto(&g, newConvScratch(), x, gy, make([]float32, nw))
			return
		}
		y = convForward(&g, newConvScratch(), x, w, b, dirty(ny).([]float64))
		dx = convGradX(&g, newConvScratch(), w, gy, dirty(nx).([]float64))
		dw = convGradWInto(&g, newConvScratch(), x, gy, make([]float64, nw))
		return
	}
	useWinograd = true
	y, dx, dw := run()
	useWinograd = false
	wy, wdx, wdw := run()
	useWinograd = true
	for _, p := range []struct {
		name      string
		got, want tensor.Tensor
	}{{"forward", y, wy}, {"dX", dx, wdx}, {"dW", dw, wdw}} {
		got, want := asF64(p.got), asF64(p.want)
		scale := 0.0
		for _, v := range want {
			scale = max(scale, math.Abs(v))
		}
		for i := range want {
			if d := math.Abs(got[i] - want[i]); !(d <= tol*scale) {
				t.Fatalf("%s %v: [%d] = %v, im2col %v (scale %v)", p.name, x.Dtype(), i, got[i], want[i], scale)
			}
		}
	}
}

// asF64 returns t's values as float64.
func asF64(t tensor.Tensor) []float64 {
	switch d := t.Data().(type) {
	case []float64:
		return d
	case []float32:
		return toF64(d)
	}
	panic(fmt.Sprintf("asF64: %T", t.Data()))
}

// TestWinogradGradFD checks the Conv op's gradients through the Winograd
// path (winoMinChannels lowered so that small layers take it) against
// central differences in float64, and its float32 results against
// float64.
func TestWinogradGradFD(t *testing.T) {
	winoAlways(t)
	for _, s := range [][2][]int{{{2, 3, 5, 6}, {4, 3, 3, 3}}, {{1, 2, 3, 3}, {2, 2, 3, 3}}} {
		t.Run(fmt.Sprint(s[0]), func(t *testing.T) {
			rng := rand.New(rand.NewSource(5))
			vals := []*tensor.Dense{randTensor(rng, s[0]...), randTensor(rng, s[1]...), randTensor(rng, s[1][0])}
			p := ConvParams{Pads: []int{1, 1, 1, 1}}
			g, err := newConvGeom(tensor.Shape(s[0]), tensor.Shape(s[1]), p)
			if err != nil || !winogradOK(&g) {
				t.Fatalf("%v: Winograd does not apply (%v)", s, err)
			}
			b := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Conv(in[0], in[1], in[2], p) }
			noteFD(gradCheck(t, vals, []bool{true, true, true}, b))
			checkF32(t, vals, b)
		})
	}
}

// TestWinogradNonFinite checks that a NaN or infinity in a pass's inputs,
// or values whose transforms overflow, give the im2col path's results
// bit for bit (winoChecked's fallback), infinities included, in the
// passes that read them (the others differ from im2col in rounding only,
// as TestWinogradMatchesIm2col checks).
func TestWinogradNonFinite(t *testing.T) {
	winoAlways(t)
	xs, ws := tensor.Shape{2, 3, 6, 5}, tensor.Shape{4, 3, 3, 3}
	g, err := newConvGeom(xs, ws, ConvParams{Pads: []int{1, 1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		set    func(x, w, gy []float32)
		passes []int // forward 0, dX 1, dW 2
	}{
		{"inf input", func(x, _, _ []float32) { x[17] = float32(math.Inf(1)) }, []int{0, 2}},
		{"nan weight", func(_, w, _ []float32) { w[5] = float32(math.NaN()) }, []int{0, 1}},
		{"inf gradient", func(_, _, gy []float32) { gy[40] = float32(math.Inf(-1)) }, []int{1, 2}},
		{"overflowing transform", func(x, _, _ []float32) { x[20], x[21] = math.MaxFloat32, math.MaxFloat32 }, []int{0, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(7))
			x, w, gy := toF32(randTensor(rng, xs...)), toF32(randTensor(rng, ws...)), toF32(randTensor(rng, 2, 4, 6, 5))
			c.set(data[float32](x), data[float32](w), data[float32](gy))
			run := func() [][]float32 {
				y := convForward(&g, newConvScratch(), x, w, nil, make([]float32, 2*4*30))
				dx := convGradX(&g, newConvScratch(), w, gy, make([]float32, 2*3*30))
				dw := convGradWInto(&g, newConvScratch(), x, gy, make([]float32, 4*27))
				return [][]float32{data[float32](y), data[float32](dx), data[float32](dw)}
			}
			useWinograd = true
			got := run()
			useWinograd = false
			want := run()
			for _, k := range c.passes {
				if !sameBits(got[k], want[k]) {
					t.Errorf("%s differs from the im2col path", []string{"forward", "dX", "dW"}[k])
				}
				if allFinite(got[k]) {
					t.Errorf("%s: all finite, want the non-finite values", []string{"forward", "dX", "dW"}[k])
				}
			}
		})
	}
}

// winoAlways lets every 3×3 convolution of padding 1 that winogradOK
// otherwise takes run as Winograd, whatever its channels and tiles, until
// t ends.
func winoAlways(t *testing.T) {
	on, minC, minW, minT := useWinograd, winoMinChannels, winoMinChannelsGradW, winoMinPlaneTiles
	t.Cleanup(func() { useWinograd, winoMinChannels, winoMinChannelsGradW, winoMinPlaneTiles = on, minC, minW, minT })
	useWinograd, winoMinChannels, winoMinChannelsGradW, winoMinPlaneTiles = true, 1, 1, 1
}

// TestWinogradScratchBytes checks WinogradScratchBytes against the bytes
// the three passes allocate from an empty scratch pool (after a first run
// of each, for the matrix product's packing buffers): the largest pass
// takes at most the estimate (and 64 KB of small allocations) and more
// than half of it; per-worker chunks and shared chunks both.
func TestWinogradScratchBytes(t *testing.T) {
	winoAlways(t)
	// Two workers: the cases' chunks (12 of 32 tiles) go one a worker on
	// up to 6 workers and are shared on more.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer func(b int) { winoBlockElems = b }(winoBlockElems)
	for _, c := range []struct {
		s     [2][]int
		block int // winoBlockElems
	}{
		{[2][]int{{2, 16, 24, 32}, {32, 16, 3, 3}}, 1 << 18},      // shared chunks
		{[2][]int{{2, 16, 24, 32}, {32, 16, 3, 3}}, 16 * 48 * 32}, // 12 chunks of 32 tiles, one worker each
		{[2][]int{{1, 64, 6, 8}, {96, 64, 3, 3}}, 1 << 18},
	} {
		s := c.s
		winoBlockElems = c.block
		if own := func() bool { _, own := winoOwnChunks(s[0][0], s[0][1], s[1][0], s[0][2], s[0][3]); return own }(); own != (c.block < 1<<18) {
			t.Fatalf("%v: each worker takes its own chunks: %v", s, own)
		}
		t.Run(fmt.Sprint(s, c.block), func(t *testing.T) {
			g, err := newConvGeom(tensor.Shape(s[0]), tensor.Shape(s[1]), ConvParams{Pads: []int{1, 1, 1, 1}})
			if err != nil {
				t.Fatal(err)
			}
			want := WinogradScratchBytes(s[0], s[1], ConvParams{Pads: []int{1, 1, 1, 1}})
			rng := rand.New(rand.NewSource(1))
			x, w, gy := data[float32](toF32(randTensor(rng, s[0]...))), data[float32](toF32(randTensor(rng, s[1]...))), data[float32](toF32(randTensor(rng, g.n, g.m, g.h, g.w)))
			out, dx, dw := make([]float32, len(gy)), make([]float32, len(x)), make([]float32, len(w))
			most := uint64(0)
			passes := []func(){
				func() { winoForward(g.n, g.c, g.m, g.h, g.w, x, w, nil, out) },
				func() { winoGradX(&g, w, gy, dx) },
				func() { winoGradW(&g, x, gy, dw) },
			}
			for _, pass := range passes { // the matrix product's own packing buffers
				pass()
			}
			for _, pass := range passes {
				colScratch.pool.mu.Lock()
				colScratch.pool.free = nil
				colScratch.pool.mu.Unlock()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				pass()
				runtime.ReadMemStats(&after)
				most = max(most, after.TotalAlloc-before.TotalAlloc)
			}
			if most > uint64(want)+64<<10 || 2*most < uint64(want) {
				t.Fatalf("the largest pass allocated %d bytes, estimate %d", most, want)
			}
		})
	}
}

// TestWinoFlip checks winoFlip's algebra: the transform of the flipped,
// channel-transposed filters (flipTranspose, what the input gradient
// convolves with) equals the forward filters' transform with ξ permuted
// by winoFlip and each plane transposed, in float64 to rounding; and
// that filterTransformT writes filterTransform's planes transposed.
func TestWinoFlip(t *testing.T) {
	for _, s := range [][2]int{{1, 1}, {3, 5}, {8, 2}, {9, 17}} {
		m, c := s[0], s[1]
		rng := rand.New(rand.NewSource(int64(m*10 + c)))
		w := data[float64](randTensor(rng, m, c, 3, 3))
		wt := make([]float64, len(w))
		flipTranspose(w, wt, m, c, 9)
		st := xiStride(m * c)
		u, ut, uT := make([]float64, 16*st), make([]float64, 16*st), make([]float64, 16*st)
		filterTransform(w, u, m, c)
		filterTransform(wt, ut, c, m)
		filterTransformT(w, uT, m, c)
		for xi := 0; xi < 16; xi++ { // filterTransformT: filterTransform's planes transposed
			for i := 0; i < c; i++ {
				for j := 0; j < m; j++ {
					if uT[xi*st+i*m+j] != u[xi*st+j*c+i] {
						t.Fatalf("m %d c %d: filterTransformT ξ %d (%d, %d) = %v, filterTransform's %v", m, c, xi, i, j, uT[xi*st+i*m+j], u[xi*st+j*c+i])
					}
				}
			}
		}
		for xi := 0; xi < 16; xi++ {
			p := winoFlip(xi)
			if winoFlip(p) != xi {
				t.Fatalf("winoFlip(winoFlip(%d)) = %d", xi, winoFlip(p))
			}
			for i := 0; i < c; i++ {
				for j := 0; j < m; j++ {
					got, want := u[p*st+j*c+i], ut[xi*st+i*m+j]
					if math.Abs(got-want) > 1e-14*(1+math.Abs(want)) {
						t.Fatalf("m %d c %d: ξ %d (%d, %d): %v, flipped filters' transform %v", m, c, xi, i, j, got, want)
					}
				}
			}
		}
	}
}

// TestWinogradMatchesDirect checks the three Winograd passes against the
// convolution's sums written out in float64 (independent of every
// convolution path here): float64 to 1e-12 and float32 to 4e-6 of each
// result's largest magnitude, on planes whose tile rows end in every
// count of tiles modulo the vector kernels' 8 (the masked tails), odd
// heights and widths, 1 to 5 samples, chunks within and across tile rows
// and samples, taken one worker each or shared, on one worker and on
// three. It also checks that the geometries Winograd does not take
// (strides, dilations, groups, other paddings and kernels) are refused.
func TestWinogradMatchesDirect(t *testing.T) {
	winoAlways(t)
	defer func(tiles, block, chunk int) {
		winoMinTiles, winoBlockElems, winoChunkElems = tiles, block, chunk
	}(winoMinTiles, winoBlockElems, winoChunkElems)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	pad1 := ConvParams{Pads: []int{1, 1, 1, 1}}
	for _, c := range []struct {
		n, c, m, h, w int
		tiles         int // tiles a chunk (winoMinTiles; per-worker chunks need several)
	}{
		{1, 2, 3, 3, 3, 32},    // 2×2 tiles: one tile row of 2
		{2, 3, 2, 5, 13, 32},   // 7 tiles a row
		{1, 4, 5, 6, 16, 5},    // 8 a row, chunks across rows
		{3, 2, 4, 7, 17, 4},    // 9 a row: one group and a tail of 1
		{2, 3, 3, 9, 23, 7},    // 12 a row
		{5, 2, 2, 4, 12, 32},   // 6 a row (MTAN's 8×12 planes), 5 samples
		{1, 3, 4, 11, 26, 3},   // 13 a row, chunks within rows
		{4, 8, 8, 8, 12, 1000}, // one chunk
	} {
		for _, procs := range []int{1, 3} {
			t.Run(fmt.Sprintf("n%d_c%d_m%d_%dx%d_tiles%d_procs%d", c.n, c.c, c.m, c.h, c.w, c.tiles, procs), func(t *testing.T) {
				runtime.GOMAXPROCS(procs)
				winoMinTiles, winoBlockElems, winoChunkElems = c.tiles, 0, 0
				xs, ws := tensor.Shape{c.n, c.c, c.h, c.w}, tensor.Shape{c.m, c.c, 3, 3}
				g, err := newConvGeom(xs, ws, pad1)
				if err != nil || !winogradOK(&g) {
					t.Fatalf("%v: Winograd does not apply (%v)", g, err)
				}
				rng := rand.New(rand.NewSource(int64(c.h*100 + c.w)))
				x, w, b := randTensor(rng, c.n, c.c, c.h, c.w), randTensor(rng, c.m, c.c, 3, 3), randTensor(rng, c.m)
				gy := randTensor(rng, c.n, c.m, c.h, c.w)
				want := directConv3x3(c.n, c.c, c.m, c.h, c.w, data[float64](x), data[float64](w), data[float64](b), data[float64](gy))
				for _, f32 := range []bool{false, true} {
					var got [3][]float64
					tol := 1e-12
					if f32 {
						tol = 4e-6
						xf, wf, bf, gf := toF32(x), toF32(w), toF32(b), toF32(gy)
						got[0] = asF64(convForward(&g, newConvScratch(), xf, wf, bf, nanSlice[float32](len(want[0]))))
						got[1] = asF64(convGradX(&g, newConvScratch(), wf, gf, nanSlice[float32](len(want[1]))))
						got[2] = asF64(convGradWInto(&g, newConvScratch(), xf, gf, make([]float32, len(want[2]))))
					} else {
						got[0] = asF64(convForward(&g, newConvScratch(), x, w, b, nanSlice[float64](len(want[0]))))
						got[1] = asF64(convGradX(&g, newConvScratch(), w, gy, nanSlice[float64](len(want[1]))))
						got[2] = asF64(convGradWInto(&g, newConvScratch(), x, gy, make([]float64, len(want[2]))))
					}
					for k, name := range []string{"forward", "dX", "dW"} {
						scale := 0.0
						for _, v := range want[k] {
							scale = max(scale, math.Abs(v))
						}
						for i, v := range want[k] {
							if d := math.Abs(got[k][i] - v); !(d <= tol*scale) {
								t.Fatalf("%s (float32 %v): [%d] = %v, direct sum %v (scale %v)", name, f32, i, got[k][i], v, scale)
							}
						}
					}
				}
			})
		}
	}
	for _, r := range []struct {
		name string
		ws   []int
		p    ConvParams
	}{
		{"stride 2", []int{4, 4, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}, Strides: []int{2, 2}}},
		{"dilation 2", []int{4, 4, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}, Dilations: []int{2, 2}}},
		{"2 groups", []int{4, 2, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}, Group: 2}},
		{"padding 0", []int{4, 4, 3, 3}, ConvParams{}},
		{"padding 2", []int{4, 4, 3, 3}, ConvParams{Pads: []int{2, 2, 2, 2}}},
		{"5×5", []int{4, 4, 5, 5}, ConvParams{Pads: []int{2, 2, 2, 2}}},
	} {
		if ConvWinograd([]int{2, 4, 8, 8}, r.ws, r.p) {
			t.Errorf("%s: runs as Winograd, want the other paths", r.name)
		}
	}
}

// nanSlice returns n NaN values: a pass must write every element.
func nanSlice[T float](n int) []T {
	d := make([]T, n)
	for i := range d {
		d[i] = T(math.NaN())
	}
	return d
}

// directConv3x3 returns the forward pass (with bias b), the input
// gradient and the weight gradient (for output gradient gy) of a 3×3
// convolution of padding 1 and stride 1, as the sums they are.
func directConv3x3(n, c, m, h, w int, x, wt, b, gy []float64) [3][]float64 {
	y, dx, dw := make([]float64, n*m*h*w), make([]float64, n*c*h*w), make([]float64, m*c*9)
	for s := 0; s < n; s++ {
		for o := 0; o < m; o++ {
			for i := 0; i < h; i++ {
				for j := 0; j < w; j++ {
					yi := ((s*m+o)*h+i)*w + j
					y[yi] = b[o]
					for ci := 0; ci < c; ci++ {
						for ki := 0; ki < 3; ki++ {
							for kj := 0; kj < 3; kj++ {
								r, q := i+ki-1, j+kj-1
								if r < 0 || r >= h || q < 0 || q >= w {
									continue
								}
								xi, wi := ((s*c+ci)*h+r)*w+q, ((o*c+ci)*3+ki)*3+kj
								y[yi] += x[xi] * wt[wi]
								dx[xi] += gy[yi] * wt[wi]
								dw[wi] += gy[yi] * x[xi]
							}
						}
					}
				}
			}
		}
	}
	return [3][]float64{y, dx, dw}
}

// TestWinogradWeightsChange runs one Conv op's scratch through two steps
// whose weights differ (as an optimizer's step changes them in place, in
// the same buffer) and checks each step's three passes against the
// direct sums: nothing computed from the first step's filters (their
// transform) may reach the second's results.
func TestWinogradWeightsChange(t *testing.T) {
	winoAlways(t)
	const n, c, m, h, w = 2, 8, 16, 6, 10
	xs, ws := tensor.Shape{n, c, h, w}, tensor.Shape{m, c, 3, 3}
	g, err := newConvGeom(xs, ws, ConvParams{Pads: []int{1, 1, 1, 1}})
	if err != nil || !winogradOK(&g) {
		t.Fatalf("%v: Winograd does not apply (%v)", g, err)
	}
	rng := rand.New(rand.NewSource(11))
	x, b, gy := toF32(randTensor(rng, n, c, h, w)), toF32(randTensor(rng, m)), toF32(randTensor(rng, n, m, h, w))
	wt := toF32(randTensor(rng, m, c, 3, 3))
	sc := newConvScratch()
	for step := 0; step < 3; step++ {
		if step > 0 { // the optimizer's update, in place
			for i, v := range data[float32](wt) {
				data[float32](wt)[i] = v - 0.3*float32(rng.NormFloat64())
			}
		}
		want := directConv3x3(n, c, m, h, w, toF64(data[float32](x)), toF64(data[float32](wt)), toF64(data[float32](b)), toF64(data[float32](gy)))
		got := [3][]float64{
			asF64(convForward(&g, sc, x, wt, b, nanSlice[float32](n*m*h*w))),
			asF64(convGradX(&g, sc, wt, gy, nanSlice[float32](n*c*h*w))),
			asF64(convGradWInto(&g, sc, x, gy, make([]float32, m*c*9))),
		}
		for k, name := range []string{"forward", "dX", "dW"} {
			scale := 0.0
			for _, v := range want[k] {
				scale = max(scale, math.Abs(v))
			}
			for i, v := range want[k] {
				if d := math.Abs(got[k][i] - v); !(d <= 4e-6*scale) {
					t.Fatalf("step %d: %s[%d] = %v, direct sum %v (scale %v)", step, name, i, got[k][i], v, scale)
				}
			}
		}
	}
}
