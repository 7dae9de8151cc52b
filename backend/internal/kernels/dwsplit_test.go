package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"
)

// dwSplitCases are depthwise geometries for the phase-plane moves: strides
// 1 and 2, odd and even planes, symmetric and lopsided padding, planes
// narrower than the kernel, rows on either side of dwClearWhole.
func dwSplitCases() []struct {
	h, w, k, s int
	pads       []int
} {
	var cs []struct {
		h, w, k, s int
		pads       []int
	}
	for _, hw := range [][2]int{{1, 1}, {2, 3}, {5, 4}, {7, 7}, {8, 9}, {16, 16}, {17, 33}, {40, 38}} {
		for _, k := range []int{3, 5} {
			for _, s := range []int{1, 2} {
				for _, pads := range [][]int{{k / 2, k / 2, k / 2, k / 2}, {0, 1, 2, 0}, {0, 0, 0, 0}} {
					if hw[0]+pads[0]+pads[2] < k || hw[1]+pads[1]+pads[3] < k {
						continue
					}
					cs = append(cs, struct {
						h, w, k, s int
						pads       []int
					}{hw[0], hw[1], k, s, pads})
				}
			}
		}
	}
	return cs
}

// TestDwSplitMerge checks the moves between an input plane and its phase
// planes against the layout's definition: phase (py, px) of stride s holds
// padded rows py, py+s, … and columns px, px+s, …, zeros where they read
// padding (or lie past the padded plane), and dwMerge reads each input
// position back from its phase. Buffers start as NaN so that a value left
// unwritten shows; values compare bit for bit, −0 included.
func TestDwSplitMerge(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, c := range dwSplitCases() {
		p := ConvParams{Group: 2, Strides: []int{c.s, c.s}, Pads: c.pads}
		g, err := newConvGeom(tensor.Shape{1, 2, c.h, c.w}, tensor.Shape{2, 1, c.k, c.k}, p)
		if err != nil {
			t.Fatal(err)
		}
		d := newDwGeom(&g)
		name := fmt.Sprintf("%dx%d_k%d_s%d_pads%v", c.h, c.w, c.k, c.s, c.pads)
		x := make([]float32, c.h*c.w)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		x[0] = float32(math.Copysign(0, -1))
		q := make([]float32, d.planes())
		for i := range q {
			q[i] = float32(math.NaN())
		}
		dwSplit(&g, &d, x, q)
		bad := 0
		for py := 0; py < c.s; py++ {
			for px := 0; px < c.s; px++ {
				for r := 0; r < d.hq; r++ {
					for col := 0; col < d.wq; col++ {
						y, xx := r*c.s+py-g.y.pb, col*c.s+px-g.x.pb
						var want float32
						if y >= 0 && y < c.h && xx >= 0 && xx < c.w {
							want = x[y*c.w+xx]
						}
						got := q[(py*c.s+px)*d.hq*d.wq+r*d.wq+col]
						if math.Float32bits(got) != math.Float32bits(want) && bad < 3 {
							bad++
							t.Errorf("%s: split phase (%d,%d) at (%d,%d) = %v, expected %v", name, py, px, r, col, got, want)
						}
					}
				}
			}
		}
		dq := make([]float32, d.planes())
		for i := range dq {
			dq[i] = float32(rng.NormFloat64())
		}
		dx := make([]float32, c.h*c.w)
		for i := range dx {
			dx[i] = float32(math.NaN())
		}
		dwMerge(&g, &d, dq, dx)
		for y := 0; y < c.h; y++ {
			for xx := 0; xx < c.w; xx++ {
				py, px := (y+g.y.pb)%c.s, (xx+g.x.pb)%c.s
				want := dq[(py*c.s+px)*d.hq*d.wq+(y+g.y.pb)/c.s*d.wq+(xx+g.x.pb)/c.s]
				if got := dx[y*c.w+xx]; math.Float32bits(got) != math.Float32bits(want) && bad < 6 {
					bad++
					t.Errorf("%s: merge at (%d,%d) = %v, expected %v", name, y, xx, got, want)
				}
			}
		}
	}
}

// BenchmarkDwSplitMerge times the phase-plane moves of the stride-2 and
// stride-1 depthwise layers of MobileNetV3-Small at 64×64 input, batch 4
// (one plane per call, as the kernels call them).
func BenchmarkDwSplitMerge(b *testing.B) {
	for _, c := range []struct{ n, h, k, s int }{{4 * 16, 32, 3, 2}, {4 * 72, 16, 3, 2}, {4 * 96, 8, 5, 2}, {4 * 88, 8, 3, 1}, {4 * 16, 16, 3, 1}} {
		p := ConvParams{Group: 2, Strides: []int{c.s, c.s}, Pads: []int{c.k / 2, c.k / 2, c.k / 2, c.k / 2}}
		g, err := newConvGeom(tensor.Shape{1, 2, c.h, c.h}, tensor.Shape{2, 1, c.k, c.k}, p)
		if err != nil {
			b.Fatal(err)
		}
		d := newDwGeom(&g)
		x, q := make([]float32, c.n*c.h*c.h), make([]float32, d.planes())
		b.Run(fmt.Sprintf("%dx%d_k%d_s%d/split", c.h, c.h, c.k, c.s), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for j := 0; j < c.n; j++ {
					dwSplit(&g, &d, x[j*c.h*c.h:], q)
				}
			}
		})
		b.Run(fmt.Sprintf("%dx%d_k%d_s%d/merge", c.h, c.h, c.k, c.s), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for j := 0; j < c.n; j++ {
					dwMerge(&g, &d, q, x[j*c.h*c.h:])
				}
			}
		})
	}
}
