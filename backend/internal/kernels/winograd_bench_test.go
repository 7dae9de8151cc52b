package kernels

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"
)

// BenchmarkWinoFilterTransforms times the filters' transform (forward
// and input-gradient passes) and the weight gradient's inverse transform
// on MTAN's filter shapes, one worker (the transforms split over filters
// on more).
func BenchmarkWinoFilterTransforms(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, s := range [][2]int{{64, 64}, {256, 256}, {512, 512}} {
		m, c := s[0], s[1]
		f32 := normals32(rand.New(rand.NewSource(1)))
		w := f32(m * c * 9)
		u := make([]float32, 16*xiStride(m*c))
		b.Run(fmt.Sprintf("filter/%dx%d", m, c), func(b *testing.B) {
			for b.Loop() {
				filterTransform(w, u, m, c)
			}
		})
		b.Run(fmt.Sprintf("grad/%dx%d", m, c), func(b *testing.B) {
			for b.Loop() {
				filterGradTransform(u, w, m, c)
			}
		})
	}
}
