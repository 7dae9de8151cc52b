package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddToBitIdentical checks that addTo's float32 vector path gives
// exactly d + s per element, signed zeros, infinities and NaN included,
// for lengths around the vector kernel's blocks of 16.
func TestAddToBitIdentical(t *testing.T) {
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-38}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 136, 1000} {
		d, s := make([]float32, n), make([]float32, n)
		for i := range d {
			d[i], s[i] = float32(r.NormFloat64()), float32(r.NormFloat64()*1e3)
			if r.IntN(5) == 0 {
				d[i] = special[r.IntN(len(special))]
			}
			if r.IntN(5) == 0 {
				s[i] = special[r.IntN(len(special))]
			}
		}
		want := make([]float32, n)
		for i := range want {
			want[i] = d[i] + s[i]
		}
		addTo(d, s)
		for i := range d {
			if math.Float32bits(d[i]) != math.Float32bits(want[i]) && !(d[i] != d[i] && want[i] != want[i]) {
				t.Fatalf("n=%d: element %d: got %v, want %v", n, i, d[i], want[i])
			}
		}
	}
}
