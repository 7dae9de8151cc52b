package graph

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"
)

// TestMoveRunsMatchIndices checks move32's runs (runsOf) against its
// per-element index loops on the moves that have them: Concat and Split
// of channel planes, a Slice of rows, the channel shuffle's Transpose of
// planes, a Concat whose inputs are reached partly (a Slice after it),
// and that moves with short runs (a Transpose of single elements, rows
// under minRunLen) keep the index loops; forward and every input's
// gradient, bit for bit, -0 gradients included.
func TestMoveRunsMatchIndices(t *testing.T) {
	cat := func(n int, cs []int, plane int) ([]int, []int) { // Concat on axis 1 of [n, c_k, plane]
		offs := []int{0}
		for _, c := range cs {
			offs = append(offs, offs[len(offs)-1]+n*c*plane)
		}
		var idx []int
		for s := 0; s < n; s++ {
			for k, c := range cs {
				for e := 0; e < c*plane; e++ {
					idx = append(idx, offs[k]+s*c*plane+e)
				}
			}
		}
		return idx, offs
	}
	shuffle := func(n, g, c, plane int) []int { // [n, g, c, plane] → [n, c, g, plane]
		var idx []int
		for s := 0; s < n; s++ {
			for ci := 0; ci < c; ci++ {
				for gi := 0; gi < g; gi++ {
					for e := 0; e < plane; e++ {
						idx = append(idx, ((s*g+gi)*c+ci)*plane+e)
					}
				}
			}
		}
		return idx
	}
	rowsSlice := func(h, w, r0, r1, c0, c1 int) []int { // [h, w][r0:r1, c0:c1]
		var idx []int
		for i := r0; i < r1; i++ {
			for j := c0; j < c1; j++ {
				idx = append(idx, i*w+j)
			}
		}
		return idx
	}
	catIdx, catOffs := cat(2, []int{3, 5}, 64)
	partIdx := catIdx[:len(catIdx)/2+100] // Concat then a Slice: inputs reached in part
	cases := []struct {
		name string
		idx  []int
		offs []int
		runs bool
	}{
		{"concat_planes", catIdx, catOffs, true},
		{"concat_sliced", partIdx, catOffs, true},
		{"split_channel", rowsSlice(4, 3*64, 0, 4, 64, 2*64), []int{0, 4 * 3 * 64}, true},
		{"slice_rows", rowsSlice(40, 48, 3, 37, 8, 40), []int{0, 40 * 48}, true},
		{"shuffle_planes", shuffle(2, 2, 6, 25), []int{0, 2 * 2 * 6 * 25}, true},
		{"transpose_elems", shuffle(1, 32, 16, 1), []int{0, 32 * 16}, false},
		{"short_rows", rowsSlice(40, 48, 0, 40, 0, 10), []int{0, 40 * 48}, false},
	}
	rng := rand.New(rand.NewSource(3))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			withRuns := newMove32(c.idx, c.offs)
			if (withRuns.runs != nil) != c.runs {
				t.Fatalf("runs found: %v, want %v", withRuns.runs != nil, c.runs)
			}
			plain := newMove32(c.idx, c.offs)
			plain.runs = nil
			nin := len(c.offs) - 1
			in := make([][]float32, nin)
			for k := range in {
				in[k] = make([]float32, c.offs[k+1]-c.offs[k])
				for i := range in[k] {
					in[k][i] = float32(rng.NormFloat64())
				}
			}
			g := make([]float32, len(c.idx))
			for i := range g {
				g[i] = float32(rng.NormFloat64())
				if i%7 == 0 {
					g[i] = float32(math.Copysign(0, -1))
				}
			}
			same := func(what string, a, b []float32) {
				for i := range a {
					if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
						t.Fatalf("%s[%d]: %v with runs, %v with indices", what, i, a[i], b[i])
					}
				}
			}
			dirty := func(n int) []float32 {
				d := make([]float32, n)
				for i := range d {
					d[i] = 1e6
				}
				return d
			}
			y1, y2 := dirty(len(c.idx)), dirty(len(c.idx))
			withRuns.forward(y1, in)
			plain.forward(y2, in)
			same("forward", y1, y2)
			for k := 0; k < nin; k++ {
				d1, d2 := dirty(len(in[k])), dirty(len(in[k]))
				withRuns.backward(k, d1, nil, nil, g)
				plain.backward(k, d2, nil, nil, g)
				same("gradient", d1, d2)
			}
		})
	}
}

// BenchmarkMoveRuns times move32 over a Concat of two [4, 64, 16, 16]
// inputs on the channel axis (runs of 16,384 values) and a Slice of 14 of
// every 16 channels of [4, 64, 8, 8] (runs of 896), the forward pass and
// each input's gradient, through the runs and through the index loops,
// on one thread.
func BenchmarkMoveRuns(b *testing.B) {
	defer func(p int) { runtime.GOMAXPROCS(p) }(runtime.GOMAXPROCS(1))
	catIdx, catOffs := make([]int, 0, 2*4*64*256), []int{0, 4 * 64 * 256, 2 * 4 * 64 * 256}
	for s := 0; s < 4; s++ {
		for k := 0; k < 2; k++ {
			for e := 0; e < 64*256; e++ {
				catIdx = append(catIdx, catOffs[k]+s*64*256+e)
			}
		}
	}
	var sliceIdx []int
	for s := 0; s < 4; s++ {
		for c := 0; c < 64; c++ {
			if c%16 < 14 {
				for e := 0; e < 64; e++ {
					sliceIdx = append(sliceIdx, (s*64+c)*64+e)
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		idx  []int
		offs []int
	}{{"concat", catIdx, catOffs}, {"slice", sliceIdx, []int{0, 4 * 64 * 64}}} {
		for _, runs := range []bool{true, false} {
			m := newMove32(c.idx, c.offs)
			if !runs {
				m.runs = nil
			}
			in := make([][]float32, len(c.offs)-1)
			for k := range in {
				in[k] = make([]float32, c.offs[k+1]-c.offs[k])
			}
			y, g := make([]float32, len(c.idx)), make([]float32, len(c.idx))
			b.Run(fmt.Sprintf("%s/runs=%v", c.name, runs), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					m.forward(y, in)
					for k := range in {
						m.backward(k, in[k], nil, nil, g)
					}
				}
			})
		}
	}
}
