package kernels

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"
	"time"

	"gorgonia.org/tensor"
)

// mtanConvShapes are the 3×3 convolutions (padding 1) that carry most of
// the full MTAN's multiply-adds at 64×96, batch 4: channels in and out and
// the plane, from the largest plane to the smallest.
var mtanConvShapes = []struct{ cin, cout, h, w int }{
	{64, 64, 64, 96},
	{128, 128, 32, 48},
	{256, 256, 16, 24},
	{512, 512, 8, 12},
	{512, 512, 4, 6},
}

// BenchmarkConvMTAN times the forward pass, the input gradient and the
// weight gradient of each of mtanConvShapes at batch 4, float32, on all
// cores, as Winograd F(2×2, 3×3) (wino) and through im2col, and reports
// GFLOP/s of the direct convolution (2·N·M·C·9·oH·oW per pass, whatever
// the path does).
func BenchmarkConvMTAN(b *testing.B) {
	const n = 4
	defer func(on bool) { useWinograd = on }(useWinograd)
	f32 := normals32(rand.New(rand.NewSource(1)))
	for _, s := range mtanConvShapes {
		g, passes := convPasses(b, f32, n, s.cin, s.cout, s.h, s.w)
		flops := 2 * float64(n*s.cout*g.colRows*g.outPlane)
		for _, p := range passes {
			benchBothPaths(b, fmt.Sprintf("%dx%dx%dx%d/%s", s.cin, s.cout, s.h, s.w, p.name), p.f, flops)
		}
	}
}

// BenchmarkConvLargePlanes times the 3×3 convolutions of MTAN's large
// planes (64 and 128 channels, at 288×384 batch 2 and 64×96 batch 4; 512
// channels at 36×48 and 18×24 and 256 at 72×96, batch 2) and
// reports GFLOP/s: the forward pass with 1 MB im2col bands
// (bandCacheElems, for filters of at most 1 MB) and with bands of
// colBandElems (16 MB); the input gradient as a forward convolution
// (useGradXAsForward) and through col2im.
func BenchmarkConvLargePlanes(b *testing.B) {
	f32 := normals32(rand.New(rand.NewSource(1)))
	band, asFwd := bandCacheElems, useGradXAsForward
	defer func() { bandCacheElems, useGradXAsForward = band, asFwd }()
	for _, s := range []struct{ n, cin, cout, h, w int }{{2, 64, 64, 288, 384}, {2, 128, 128, 144, 192}, {4, 64, 64, 64, 96}, {4, 64, 128, 64, 96}, {2, 256, 256, 72, 96}, {2, 512, 512, 36, 48}, {2, 512, 512, 18, 24}} {
		xs, ws := tensor.Shape{s.n, s.cin, s.h, s.w}, tensor.Shape{s.cout, s.cin, 3, 3}
		g, err := newConvGeom(xs, ws, ConvParams{Pads: []int{1, 1, 1, 1}})
		if err != nil {
			b.Fatal(err)
		}
		x := newTensor(xs, f32(xs.TotalSize()))
		w := newTensor(ws, f32(ws.TotalSize()))
		gy := newTensor(tensor.Shape{s.n, s.cout, g.oh, g.ow}, f32(s.n*s.cout*g.outPlane))
		out := make([]float32, s.n*s.cout*g.outPlane)
		dx := make([]float32, xs.TotalSize())
		flops := 2 * float64(s.n*s.cout*g.colRows*g.outPlane)
		for _, v := range []struct {
			name string
			set  func()
			f    func()
		}{
			{"fwd/band1MB", func() { bandCacheElems = band }, func() { convForward[float32](&g, newConvScratch(), x, w, nil, out) }},
			{"fwd/band16MB", func() { bandCacheElems = colBandElems }, func() { convForward[float32](&g, newConvScratch(), x, w, nil, out) }},
			{"dx/as-forward", func() { useGradXAsForward = true }, func() { clear(dx); convGradX[float32](&g, newConvScratch(), w, gy, dx) }},
			{"dx/col2im", func() { useGradXAsForward = false }, func() { clear(dx); convGradX[float32](&g, newConvScratch(), w, gy, dx) }},
		} {
			b.Run(fmt.Sprintf("n%d_%dx%dx%dx%d/%s", s.n, s.cin, s.cout, s.h, s.w, v.name), func(b *testing.B) {
				v.set()
				defer func() { bandCacheElems, useGradXAsForward = band, asFwd }()
				for b.Loop() {
					v.f()
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// normals32 returns a function making slices of k standard normal float32
// values drawn from rng.
func normals32(rng *rand.Rand) func(k int) []float32 {
	return func(k int) []float32 {
		d := make([]float32, k)
		for i := range d {
			d[i] = float32(rng.NormFloat64())
		}
		return d
	}
}

// BenchmarkConvGradW times MTAN's weight gradients with the product as
// gy·colᵀ (swap0) and as dWᵀ = col·gyᵀ (swap128, dwSwapMaxM), GFLOP/s.
func BenchmarkConvGradW(b *testing.B) {
	f32 := normals32(rand.New(rand.NewSource(1)))
	for _, s := range []struct{ n, cin, cout, h, w, k int }{{2, 64, 64, 288, 384, 3}, {4, 64, 64, 64, 96, 3}, {4, 128, 64, 32, 48, 3}, {2, 64, 64, 288, 384, 1}, {2, 128, 128, 144, 192, 3}} {
		xs, ws := tensor.Shape{s.n, s.cin, s.h, s.w}, tensor.Shape{s.cout, s.cin, s.k, s.k}
		pad := s.k / 2
		g, err := newConvGeom(xs, ws, ConvParams{Pads: []int{pad, pad, pad, pad}})
		if err != nil {
			b.Fatal(err)
		}
		x := newTensor(xs, f32(xs.TotalSize()))
		gy := newTensor(tensor.Shape{s.n, s.cout, g.oh, g.ow}, f32(s.n*s.cout*g.outPlane))
		dw := make([]float32, s.cout*g.colRows)
		flops := 2 * float64(s.n*s.cout*g.colRows*g.outPlane)
		for _, sw := range []int{0, 128} {
			b.Run(fmt.Sprintf("n%d_%dx%dx%dx%dk%d/dw/swap%d", s.n, s.cin, s.cout, s.h, s.w, s.k, sw), func(b *testing.B) {
				dwSwapMaxM = sw
				defer func() { dwSwapMaxM = 128 }()
				for b.Loop() {
					clear(dw)
					convGradWInto[float32](&g, newConvScratch(), x, gy, dw)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkConvGradWBands times the weight gradients of MTAN's 3×3
// convolutions (batch 4 at 64×96 and batch 2 at 288×384's deeper planes)
// in im2col bands of bandCacheElems, at least gradWMinCols pixels
// (gradWBandRows: band1MB), and of colBandElems (band16MB), on all cores,
// GFLOP/s.
func BenchmarkConvGradWBands(b *testing.B) {
	f32 := normals32(rand.New(rand.NewSource(1)))
	cache := bandCacheElems
	defer func() { bandCacheElems = cache }()
	for _, s := range []struct{ n, cin, cout, h, w int }{{4, 64, 64, 64, 96}, {4, 128, 128, 32, 48}, {4, 128, 256, 32, 48}, {4, 256, 256, 16, 24}, {4, 256, 512, 16, 24}, {4, 128, 64, 32, 48}, {2, 128, 128, 144, 192}, {2, 256, 256, 72, 96}, {2, 512, 512, 36, 48}} {
		xs, ws := tensor.Shape{s.n, s.cin, s.h, s.w}, tensor.Shape{s.cout, s.cin, 3, 3}
		g, err := newConvGeom(xs, ws, ConvParams{Pads: []int{1, 1, 1, 1}})
		if err != nil {
			b.Fatal(err)
		}
		x := newTensor(xs, f32(xs.TotalSize()))
		gy := newTensor(tensor.Shape{s.n, s.cout, g.oh, g.ow}, f32(s.n*s.cout*g.outPlane))
		dw := make([]float32, ws.TotalSize())
		flops := 2 * float64(s.n*s.cout*g.colRows*g.outPlane)
		for _, v := range []struct {
			name string
			band int
		}{{"band1MB", cache}, {"band16MB", colBandElems}} {
			b.Run(fmt.Sprintf("n%d_%dx%dx%dx%d/%s", s.n, s.cin, s.cout, s.h, s.w, v.name), func(b *testing.B) {
				bandCacheElems = v.band
				defer func() { bandCacheElems = cache }()
				sc := newConvScratch()
				for b.Loop() {
					clear(dw)
					convGradWInto[float32](&g, sc, x, gy, dw)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// mtanWinoShapes are the full MTAN's 3×3 convolutions (padding 1) at
// 64×96, batch 4: channels in and out, the plane, and how many of each
// the model has.
var mtanWinoShapes = []struct{ cin, cout, h, w, count int }{
	{64, 64, 64, 96, 9}, {64, 128, 64, 96, 3}, {128, 256, 32, 48, 3}, {256, 512, 16, 24, 3},
	{512, 512, 8, 12, 5}, {512, 512, 4, 6, 12}, {256, 256, 16, 24, 2}, {512, 256, 8, 12, 4},
	{256, 128, 16, 24, 4}, {128, 64, 32, 48, 4}, {128, 128, 32, 48, 1}, {64, 128, 32, 48, 1},
	{128, 256, 16, 24, 1}, {256, 512, 8, 12, 1}, {256, 256, 8, 12, 2}, {128, 128, 16, 24, 2},
	{64, 64, 32, 48, 1},
}

// BenchmarkConvWinograd times each of mtanWinoShapes' passes (forward,
// input gradient, weight gradient) as Winograd F(2×2, 3×3) and through
// im2col (Winograd off), batch 4, float32, on all cores: the measurements
// behind winogradOK's bounds.
func BenchmarkConvWinograd(b *testing.B) {
	const n = 4
	defer func(on bool, minC, minW, minT int) {
		useWinograd, winoMinChannels, winoMinChannelsGradW, winoMinPlaneTiles = on, minC, minW, minT
	}(useWinograd, winoMinChannels, winoMinChannelsGradW, winoMinPlaneTiles)
	winoMinChannels, winoMinChannelsGradW, winoMinPlaneTiles = 1, 1, 1
	f32 := normals32(rand.New(rand.NewSource(1)))
	for _, s := range mtanWinoShapes {
		_, passes := convPasses(b, f32, n, s.cin, s.cout, s.h, s.w)
		for _, p := range passes {
			benchBothPaths(b, fmt.Sprintf("%dx%dx%dx%d/%s", s.cin, s.cout, s.h, s.w, p.name), p.f, 0)
		}
	}
}

// convPass is one pass of a benchmarked convolution.
type convPass struct {
	name string
	f    func()
}

// convPasses sets up a float32 3×3 convolution of padding 1 (n samples,
// cin channels to cout on h×w planes, values from f32) and returns its
// geometry and its three passes: forward, input gradient and weight
// gradient (dW zeroed first, as its callers hand it).
func convPasses(b *testing.B, f32 func(int) []float32, n, cin, cout, h, w int) (convGeom, []convPass) {
	xs, ws := tensor.Shape{n, cin, h, w}, tensor.Shape{cout, cin, 3, 3}
	g, err := newConvGeom(xs, ws, ConvParams{Pads: []int{1, 1, 1, 1}})
	if err != nil {
		b.Fatal(err)
	}
	x := newTensor(xs, f32(xs.TotalSize()))
	wt := newTensor(ws, f32(ws.TotalSize()))
	gy := newTensor(tensor.Shape{n, cout, g.oh, g.ow}, f32(n*cout*g.outPlane))
	out := make([]float32, n*cout*g.outPlane)
	dx := make([]float32, xs.TotalSize())
	dw := make([]float32, ws.TotalSize())
	sc := newConvScratch()
	return g, []convPass{
		{"fwd", func() { convForward[float32](&g, sc, x, wt, nil, out) }},
		{"dx", func() { convGradX[float32](&g, sc, wt, gy, dx) }},
		{"dw", func() { clear(dw); convGradWInto[float32](&g, sc, x, gy, dw) }},
	}
}

// benchBothPaths times f as Winograd (name/wino) and through im2col
// (name/im2col), reporting GFLOP/s of flops a call when flops > 0 and the
// process's CPU time a call (cpu-ms/op: steadier than wall time on a
// machine other processes share). The caller restores Winograd.
func benchBothPaths(b *testing.B, name string, f func(), flops float64) {
	for _, wino := range []bool{true, false} {
		path := map[bool]string{true: "wino", false: "im2col"}[wino]
		b.Run(name+"/"+path, func(b *testing.B) {
			useWinograd = wino
			c0 := processCPU()
			for b.Loop() {
				f()
			}
			b.ReportMetric((processCPU()-c0).Seconds()*1e3/float64(b.N), "cpu-ms/op")
			if flops > 0 {
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			}
		})
	}
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
