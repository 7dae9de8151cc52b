package kernels

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// BenchmarkConvWideRows times the forward pass and the weight gradient of
// LeNet's two convolutions and the small MTAN's padded 3×3 layers (batch
// as the step benchmarks use them) with the taps' rows read in place
// (inplace: SgemmRows, SdotRowsSeg) and copied (copied: col, padRows),
// and their input gradient (dx), GFLOP/s.
func BenchmarkConvWideRows(b *testing.B) {
	f32 := normals32(rand.New(rand.NewSource(1)))
	for _, s := range []struct {
		name          string
		n, c, m, h, w int
		k, pad        int
	}{
		{"lenet1", 256, 1, 10, 36, 36, 9, 0},
		{"lenet2", 256, 10, 20, 14, 14, 5, 0},
		{"mtan16", 8, 16, 16, 32, 32, 3, 1},
		{"mtan32", 8, 32, 32, 16, 16, 3, 1},
	} {
		xs, ws := tensor.Shape{s.n, s.c, s.h, s.w}, tensor.Shape{s.m, s.c, s.k, s.k}
		g, err := newConvGeom(xs, ws, ConvParams{Pads: []int{s.pad, s.pad, s.pad, s.pad}})
		if err != nil {
			b.Fatal(err)
		}
		x, w := newTensor(xs, f32(xs.TotalSize())), newTensor(ws, f32(ws.TotalSize()))
		gy := newTensor(tensor.Shape{s.n, s.m, g.oh, g.ow}, f32(s.n*s.m*g.outPlane))
		y := make([]float32, s.n*s.m*g.outPlane)
		dw := make([]float32, s.m*g.colRows)
		flops := 2 * float64(s.n*s.m*g.colRows*g.outPlane)
		dx := make([]float32, s.n*s.c*g.inPlane)
		b.Run(s.name+"/dx", func(b *testing.B) {
			for b.Loop() {
				convGradX[float32](&g, &scratch{}, w, gy, dx)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		for _, inPlace := range []bool{true, false} {
			mode := map[bool]string{true: "inplace", false: "copied"}[inPlace]
			b.Run(fmt.Sprintf("%s/fwd/%s", s.name, mode), func(b *testing.B) {
				defer func(v bool) { useWideInPlace = v }(useWideInPlace)
				useWideInPlace = inPlace
				for b.Loop() {
					convForward[float32](&g, &scratch{}, x, w, nil, y)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			b.Run(fmt.Sprintf("%s/dw/%s", s.name, mode), func(b *testing.B) {
				defer func(v bool) { useWideSegments = v }(useWideSegments)
				useWideSegments = inPlace
				for b.Loop() {
					clear(dw)
					convGradWInto[float32](&g, newConvScratch(), x, gy, dw)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
