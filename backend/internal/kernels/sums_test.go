package kernels

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// TestAllFinite checks allFinite on finite slices and on a NaN or an
// infinity at every position (each of the four running sums, the tail).
func TestAllFinite(t *testing.T) {
	for n := 0; n <= 11; n++ {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i) - 3.5
		}
		if !allFinite(x) {
			t.Fatalf("len %d, finite: allFinite false", n)
		}
		for i := 0; i < n; i++ {
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
				y := append([]float32(nil), x...)
				y[i] = bad
				if allFinite(y) {
					t.Fatalf("len %d, %v at %d: allFinite true", n, bad, i)
				}
			}
		}
	}
	if !allFinite([]float64{math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64}) {
		t.Fatal("extreme finite float64 values: allFinite false")
	}
}

// TestChannelSum checks channelSum against a float64 sum per channel, on
// shapes below and above two chunks of minChunkWork (serial and split among
// goroutines), and that the split gives the serial sums bit for bit.
func TestChannelSum(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for _, s := range []tensor.Shape{{3, 5, 7}, {2, 3}, {4, 13, 41, 37}, {256, 10, 28, 28}} {
		n, c := s[0], s[1]
		inner := s.TotalSize() / (n * c)
		d := make([]float32, s.TotalSize())
		for i := range d {
			d[i] = float32(rng.NormFloat64())
		}
		got := data[float32](channelSum[float32](newTensor(s, d), nil))
		for j := 0; j < c; j++ {
			var want float64
			var serial float32
			for i := 0; i < n; i++ {
				blk := d[(i*c+j)*inner:][:inner]
				serial += sum4(blk)
				for _, v := range blk {
					want += float64(v)
				}
			}
			if got[j] != serial {
				t.Fatalf("%v channel %d: %v, serial sum %v", s, j, got[j], serial)
			}
			if math.Abs(float64(got[j])-want) > 1e-5*float64(n*inner) {
				t.Fatalf("%v channel %d: %v, float64 sum %v", s, j, got[j], want)
			}
		}
	}
}
