package ops

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

func BenchmarkTmpGradW(b *testing.B) {
	f32 := normals32(rand.New(rand.NewSource(1)))
	for _, s := range []struct{ n, cin, cout, h, w, k int }{{2, 64, 64, 288, 384, 3}, {2, 512, 512, 18, 24, 3}, {4, 512, 512, 4, 6, 3}, {2, 64, 64, 288, 384, 1}} {
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
		b.Run(fmt.Sprintf("n%d_%dx%dx%dx%dk%d/dw", s.n, s.cin, s.cout, s.h, s.w, s.k), func(b *testing.B) {
			for b.Loop() {
				clear(dw)
				convGradWInto[float32](g, newConvScratch(), x, gy, dw)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
