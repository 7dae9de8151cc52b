package ops

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// TestScatterWindowsMatchClearAndScatter checks scatterPlanes on planes
// tiled by 2×2 windows (scatterWindows2x2: each element written once)
// against the same scatter through the plane-wide clear and the index
// loop (the output shape given flat, [N, C, H·W], which has no windows),
// bit for bit, into dirty buffers: the gradient's accumulation (−0
// values become +0) and MaxUnpool's writes, and planes with an index
// outside its window (in its plane), which take the clear and the loop.
func TestScatterWindowsMatchClearAndScatter(t *testing.T) {
	cases := []struct {
		name      string
		n, c      int
		oh, ow    int
		add       bool
		strayPlan int // a plane with one index moved outside its window, or −1
	}{
		{"grad_4x4", 2, 3, 4, 4, true, -1},
		{"grad_7x5", 1, 4, 7, 5, true, -1},
		{"unpool_3x6", 2, 2, 3, 6, false, -1},
		{"grad_stray", 2, 3, 4, 4, true, 4},
		{"unpool_stray", 2, 2, 3, 6, false, 1},
		{"grad_1x1", 3, 2, 1, 1, true, -1},
	}
	rng := rand.New(rand.NewSource(9))
	for _, c := range cases {
		for _, T := range []string{"float32", "float64"} {
			t.Run(c.name+"/"+T, func(t *testing.T) {
				h, w := 2*c.oh, 2*c.ow
				planes, vplane, plane := c.n*c.c, c.oh*c.ow, h*w
				idx := make([]int64, planes*vplane)
				vals := make([]float64, len(idx))
				for p := 0; p < planes; p++ {
					for oi := 0; oi < c.oh; oi++ {
						for oj := 0; oj < c.ow; oj++ {
							di, dj := rng.Intn(2), rng.Intn(2)
							i := p*vplane + oi*c.ow + oj
							idx[i] = int64(p*plane + (2*oi+di)*w + 2*oj + dj)
							vals[i] = rng.NormFloat64()
							if i%5 == 0 {
								vals[i] = math.Copysign(0, -1)
							}
						}
					}
				}
				if c.strayPlan >= 0 { // its first window's index moved to the plane's last element
					idx[c.strayPlan*vplane] = int64(c.strayPlan*plane + plane - 1)
				}
				it := tensor.New(tensor.WithShape(c.n, c.c, c.oh, c.ow), tensor.WithBacking(idx))
				run := func(s tensor.Shape) []uint64 {
					var bits []uint64
					switch T {
					case "float32":
						v := make([]float32, len(vals))
						for i, x := range vals {
							v[i] = float32(x)
						}
						out := make([]float32, planes*plane)
						for i := range out {
							out[i] = 7
						}
						vt := tensor.New(tensor.WithShape(c.n, c.c, c.oh, c.ow), tensor.WithBacking(v))
						if r, err := scatterPlanes(vt, it, s, out, c.add); r == nil || err != nil {
							t.Fatalf("scatterPlanes: %v, %v", r, err)
						}
						for _, x := range out {
							bits = append(bits, uint64(math.Float32bits(x)))
						}
					default:
						v := append([]float64(nil), vals...)
						out := make([]float64, planes*plane)
						for i := range out {
							out[i] = 7
						}
						vt := tensor.New(tensor.WithShape(c.n, c.c, c.oh, c.ow), tensor.WithBacking(v))
						if r, err := scatterPlanes(vt, it, s, out, c.add); r == nil || err != nil {
							t.Fatalf("scatterPlanes: %v, %v", r, err)
						}
						for _, x := range out {
							bits = append(bits, math.Float64bits(x))
						}
					}
					return bits
				}
				got, want := run(tensor.Shape{c.n, c.c, h, w}), run(tensor.Shape{c.n, c.c, h * w})
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("element %d: bits %x with windows, %x with clear and scatter", i, got[i], want[i])
					}
				}
			})
		}
	}
}
