package vmath

import (
	"math"
	"math/rand"
	"testing"
)

// TestAxpyDot32 checks Axpy32 and Dot32 against float64 sums on every
// length from 0 to 70 (vector blocks and tails), at offsets that leave
// the vectors unaligned: within float32 round-off of Σ|terms|.
func TestAxpyDot32(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for n := 0; n <= 70; n++ {
		for _, off := range []int{0, 1, 3} {
			x, y := make([]float32, n+off), make([]float32, n+off)
			for i := range x {
				x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			a := float32(r.NormFloat64())
			xs, ys := x[off:], y[off:]
			var want, abs float64
			for i := range xs {
				want += float64(xs[i]) * float64(ys[i])
				abs += math.Abs(float64(xs[i]) * float64(ys[i]))
			}
			if got := Dot32(xs, ys); math.Abs(float64(got)-want) > 1e-6*abs+1e-30 {
				t.Fatalf("n=%d off=%d: Dot32 %v, float64 %v", n, off, got, want)
			}
			y0 := append([]float32{}, ys...)
			Axpy32(a, xs, ys)
			for i := range ys {
				w := float64(y0[i]) + float64(a)*float64(xs[i])
				if math.Abs(float64(ys[i])-w) > 2e-7*(math.Abs(float64(y0[i]))+math.Abs(float64(a)*float64(xs[i]))) {
					t.Fatalf("n=%d off=%d: Axpy32[%d] %v, float64 %v", n, off, i, ys[i], w)
				}
			}
		}
	}
}

// BenchmarkAxpyDot32 times Axpy32 and Dot32 on a depthwise plane's length.
func BenchmarkAxpyDot32(b *testing.B) {
	x, y := make([]float32, 352), make([]float32, 352)
	for i := range x {
		x[i], y[i] = float32(i%7), float32(i%5)
	}
	b.Run("axpy", func(b *testing.B) {
		for b.Loop() {
			Axpy32(0.5, x, y)
		}
	})
	b.Run("dot", func(b *testing.B) {
		for b.Loop() {
			Dot32(x, y)
		}
	})
}
