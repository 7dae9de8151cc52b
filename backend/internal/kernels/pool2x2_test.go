package kernels

import (
	"math"
	"math/rand"
	"testing"
)

// TestMaxPool2x2MatchesGeneral checks that the 2×2 fast path picks the
// same indices as the general window loop, with ties (signed zeros too),
// NaNs (first, later and several in a window), infinities and odd plane
// sizes; wide planes take the vector kernel's full blocks of 16 windows
// and its masked tail, rare NaNs its hand-over of a row to Go midway.
func TestMaxPool2x2MatchesGeneral(t *testing.T) {
	cases := []struct {
		name string
		h, w int
		pNaN float64
	}{
		{"even", 8, 8, 0},
		{"odd", 7, 9, 0},
		{"nans", 6, 6, 0.3},
		{"mostly nan", 5, 8, 0.8},
		{"lenet", 28, 28, 0.05},
		{"signed zeros", 6, 8, -1},
		{"wide", 10, 70, 0},
		{"wide odd", 9, 71, 0},
		{"wide rare nans", 12, 96, 0.004},
		{"wide signed zeros", 4, 64, -1},
		{"one window", 2, 2, 0},
	}
	r := rand.New(rand.NewSource(3))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := poolGeom{n: 1, c: 1, h: c.h, w: c.w, oh: c.h / 2, ow: c.w / 2,
				y: window{k: 2, s: 2, d: 1}, x: window{k: 2, s: 2, d: 1}}
			if !g.is2x2() {
				t.Fatalf("%v: not a 2x2 geometry", g)
			}
			for trial := 0; trial < 50; trial++ {
				x := make([]float32, c.h*c.w)
				for i := range x {
					switch u := r.Float64(); {
					case c.pNaN < 0: // +0 and −0 only: ties that compare equal
						x[i] = float32(math.Copysign(0, u-0.5))
					case u < c.pNaN:
						x[i] = float32(math.NaN())
					case u < c.pNaN+0.05:
						x[i] = float32(math.Inf(-1))
					default:
						x[i] = float32(r.Intn(4)) // ties
					}
				}
				got := make([]int64, g.oh*g.ow)
				want := make([]int64, g.oh*g.ow)
				maxPool2x2(x, got, g.w, g.oh, g.ow, 100)
				if err := maxPoolPlane(g, x, want, 100); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("trial %d window %d: index %d, general loop %d (x %v)", trial, i, got[i], want[i], x)
					}
				}
			}
		})
	}
}

// TestScatterPlanesMatchesScatter checks MaxPool's parallel gradient
// scatter against the serial scatterK: bit-identical sums for indices
// from maxPoolIndices (windows overlapping, so positions repeat), a dirty
// output buffer, and the fallback for an index outside its plane.
func TestScatterPlanesMatchesScatter(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	x := make([]float32, 4*3*9*9)
	for i := range x {
		x[i] = float32(r.Intn(3))
	}
	s := []int{4, 3, 9, 9}
	g, err := newPoolGeom(s, PoolParams{Kernel: []int{3, 3}, Strides: []int{1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := maxPoolIndices[float32](g, newTensor(s, x), make([]int64, g.n*g.c*g.oh*g.ow))
	if err != nil {
		t.Fatal(err)
	}
	moved := append([]int64{}, data[int64](it)...)
	moved[5] = int64(len(x) - 1) // into the last plane
	cases := []struct {
		name string
		idx  []int64
	}{
		{"maxpool indices", data[int64](it)},
		{"outside its plane", moved},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := make([]float32, len(c.idx))
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
			vt, ixt := newTensor(it.Shape(), v), newTensor(it.Shape(), c.idx)
			want, err := scatterK[float32](vt, ixt, s, true, nil)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]float32, len(x))
			for i := range buf {
				buf[i] = 7 // dirty
			}
			got, err := scatterPlanesInto(buf, vt, ixt, s)
			if err != nil {
				t.Fatal(err)
			}
			w, gd := data[float32](want), data[float32](got)
			for i := range w {
				if math.Float32bits(w[i]) != math.Float32bits(gd[i]) {
					t.Fatalf("element %d: %v, serial scatter %v", i, gd[i], w[i])
				}
			}
		})
	}
}

// TestGatherIntoMatchesGather checks MaxPool's gather into a dirty buffer
// (split among goroutines) against gatherK, and its out-of-range error.
func TestGatherIntoMatchesGather(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	x := make([]float32, 1000)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	long := make([]int64, 3<<14+5)
	for i := range long {
		long[i] = int64(r.Intn(len(x)))
	}
	bad := append([]int64{}, long...)
	bad[len(bad)-1] = -1
	cases := []struct {
		name    string
		idx     []int64
		wantErr bool
	}{
		{"short", long[:7], false},
		{"split", long, false},
		{"out of range", bad, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			xt, it := newTensor([]int{len(x)}, x), newTensor([]int{len(c.idx)}, c.idx)
			buf := make([]float32, len(c.idx))
			for i := range buf {
				buf[i] = 7
			}
			got, err := gatherInto(xt, it, buf)
			if c.wantErr {
				if err == nil {
					t.Fatal("no error for an index out of range")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, err := gatherK[float32](xt, it)
			if err != nil {
				t.Fatal(err)
			}
			w, g := data[float32](want), data[float32](got)
			for i := range w {
				if math.Float32bits(w[i]) != math.Float32bits(g[i]) {
					t.Fatalf("element %d: %v, gatherK %v", i, g[i], w[i])
				}
			}
		})
	}
}

// BenchmarkMaxPool2x2 times the 2×2 fast path on LeNet's first pooled
// plane (28×28), random values (no NaN), in ns per input value.
func BenchmarkMaxPool2x2(b *testing.B) {
	const h, w = 28, 28
	r := rand.New(rand.NewSource(1))
	x := make([]float32, 64*h*w)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	idx := make([]int64, 64*h*w/4)
	for b.Loop() {
		for p := 0; p < 64; p++ {
			maxPool2x2(x[p*h*w:(p+1)*h*w], idx[p*h*w/4:(p+1)*h*w/4], w, h/2, w/2, p*h*w)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/value")
}

// TestUnpoolMatchesScatter checks MaxUnpool's forward pass into a dirty
// buffer (plane by plane in parallel) against scatterK's serial writes,
// bit for bit: MaxPool's indices, an index repeated within its plane
// (the last value wins), an index outside its plane (the serial
// fallback), and no buffer.
func TestUnpoolMatchesScatter(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	s := []int{2, 3, 6, 8}
	x := make([]float32, 2*3*6*8)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	g, err := newPoolGeom(s, PoolParams{Kernel: []int{2, 2}, Strides: []int{2, 2}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := maxPoolIndices[float32](g, newTensor(s, x), make([]int64, g.n*g.c*g.oh*g.ow))
	if err != nil {
		t.Fatal(err)
	}
	pooled := data[int64](it)
	repeated := append([]int64{}, pooled...)
	repeated[3] = repeated[1] // plane 0 twice at one place
	moved := append([]int64{}, pooled...)
	moved[5] = int64(len(x) - 1) // into the last plane
	for _, c := range []struct {
		name  string
		idx   []int64
		dirty bool
	}{
		{"maxpool indices", pooled, true},
		{"repeated index", repeated, true},
		{"outside its plane", moved, true},
		{"fresh buffer", pooled, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := make([]float32, len(c.idx))
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
			vt, ixt := newTensor(it.Shape(), v), newTensor(it.Shape(), c.idx)
			want, err := scatterK[float32](vt, ixt, s, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			var buf any
			if c.dirty {
				b := make([]float32, len(x))
				for i := range b {
					b[i] = 7
				}
				buf = b
			}
			got, err := unpoolInto(buf, vt, ixt, want.Shape())
			if err != nil {
				t.Fatal(err)
			}
			if !got.Shape().Eq(want.Shape()) {
				t.Fatalf("shape %v, want %v", got.Shape(), s)
			}
			w, gd := data[float32](want), data[float32](got)
			for i := range w {
				if math.Float32bits(w[i]) != math.Float32bits(gd[i]) {
					t.Fatalf("element %d: %v, serial scatter %v", i, gd[i], w[i])
				}
			}
		})
	}
}
