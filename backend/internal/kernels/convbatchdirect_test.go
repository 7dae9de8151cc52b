package kernels

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// BenchmarkConvPointwiseSmall times the three passes of EfficientNet-B0's
// pointwise layers on 2×2 and 4×4 planes and a squeeze-and-excitation
// 1×1 at batch 4, over the whole batch and per sample (useBatchDirect).
func BenchmarkConvPointwiseSmall(b *testing.B) {
	shapes := []struct {
		x []int
		m int
	}{
		{[]int{4, 1152, 2, 2}, 192}, {[]int{4, 192, 2, 2}, 1152}, {[]int{4, 672, 4, 4}, 112},
		{[]int{4, 112, 4, 4}, 672}, {[]int{4, 1152, 1, 1}, 48},
	}
	defer func() { useBatchDirect = true }()
	for _, s := range shapes {
		ws := []int{s.m, s.x[1], 1, 1}
		g, err := newConvGeom(tensor.Shape(s.x), tensor.Shape(ws), ConvParams{})
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewSource(1))
		x, w, gy := toF32(randTensor(rng, s.x...)), toF32(randTensor(rng, ws...)), toF32(randTensor(rng, g.n, g.m, g.oh, g.ow))
		y, dx, dw := make([]float32, g.n*g.m*g.outPlane), make([]float32, g.n*g.c*g.inPlane), make([]float32, g.m*g.colRows)
		for _, on := range []bool{true, false} {
			b.Run(fmt.Sprintf("%v_m%d/batched=%v", s.x, s.m, on), func(b *testing.B) {
				useBatchDirect = on
				sc := newConvScratch()
				for i := 0; i < b.N; i++ {
					convForward(&g, sc, x, w, nil, y)
					convGradX(&g, sc, w, gy, dx)
					clear(dw)
					convGradWInto(&g, sc, x, gy, dw)
				}
			})
		}
	}
}
