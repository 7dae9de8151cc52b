package loss

import (
	"math"
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
)

// TestClassLoss32MatchesFloat64 checks the float32 paths of nll and ce
// (classForward, classBackward on float32 data) against the float64
// formula rounded once, bit for bit: the loss, and the gradient as the
// float64 kernel forms it (k·exp(log p) added to a zeroed element, k
// subtracted at the target), with ignored targets, a scale g of 0 (the
// sign of zeros) and of 0.7, into a dirty buffer (the gradient writes
// every element: its buffer is not zeroed first).
func TestClassLoss32MatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	const N, C, inner = 3, 5, 7
	x32 := make([]float32, N*C*inner)
	x64 := make([]float64, len(x32))
	for i := range x32 {
		x32[i] = float32(2 * r.NormFloat64())
		x64[i] = float64(x32[i])
	}
	tg32 := make([]float32, N*inner)
	tg64 := make([]float64, len(tg32))
	for i := range tg32 {
		tg32[i] = float32(r.Intn(C+1) - 1) // -1: ignored
		tg64[i] = float64(tg32[i])
	}
	for _, logits := range []bool{false, true} {
		c := classGeom{N: N, C: C, inner: inner, ignore: -1, logits: logits}
		var l32 [1]float32
		var l64 [1]float64
		classForward(c, l32[:], x32, tg32)
		classForward(c, l64[:], x64, tg64)
		if math.Float32bits(l32[0]) != math.Float32bits(float32(l64[0])) {
			t.Errorf("logits=%v: loss %v, float64 %v", logits, l32[0], l64[0])
		}
		for _, g := range []float64{0, 0.7} {
			d32 := onnxtest.Dirty32(len(x32)) // classBackward writes every element
			classBackward(c, d32, x32, tg32, g)
			want := make([]float64, len(x64)) // the float64 kernel's accumulation
			k := g / classCount(c, tg64)
			lp := make([]float64, C)
			for n := 0; n < N; n++ {
				for j := 0; j < inner; j++ {
					cl := tg64[n*inner+j]
					if cl == -1 {
						continue
					}
					base := n*C*inner + j
					if logits {
						classRow(c, x64, n, j, lp)
						for cc := 0; cc < C; cc++ {
							want[base+cc*inner] += k * math.Exp(lp[cc])
						}
					}
					want[base+int(cl)*inner] -= k
				}
			}
			for i, v := range want {
				if math.Float32bits(d32[i]) != math.Float32bits(float32(v)) {
					t.Fatalf("logits=%v g=%v: gradient[%d] = %v, float64 %v", logits, g, i, d32[i], v)
				}
			}
		}
	}
}
