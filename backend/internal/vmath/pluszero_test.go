package vmath

import (
	"math"
	"math/rand"
	"testing"
)

// TestPlusZero32 checks PlusZero32 against the Go loop 0 + x[i], bit for
// bit, on every length from 0 to 70 (vector blocks and tails) at
// unaligned offsets, with −0, +0, infinities, NaN and subnormals among
// the values, and that it writes nothing past len(dst).
func TestPlusZero32(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	special := []float32{float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32}
	for n := 0; n <= 70; n++ {
		for _, off := range []int{0, 1, 3} {
			x, dst := make([]float32, n+off), make([]float32, n+off+1)
			for i := range x {
				x[i] = float32(r.NormFloat64())
				if i%3 == 0 {
					x[i] = special[r.Intn(len(special))]
				}
			}
			for i := range dst {
				dst[i] = 7
			}
			PlusZero32(dst[off:off+n], x[off:])
			for i := 0; i < n; i++ {
				want := 0 + x[off+i]
				if got := dst[off+i]; math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("n=%d off=%d: [%d] = %v (%#x), want %v (%#x)", n, off, i, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
			if dst[off+n] != 7 {
				t.Fatalf("n=%d off=%d: wrote past the end", n, off)
			}
			if n > 0 && math.Signbit(float64(dst[off])) && x[off] == 0 {
				t.Fatalf("n=%d off=%d: −0 kept", n, off)
			}
		}
	}
}
