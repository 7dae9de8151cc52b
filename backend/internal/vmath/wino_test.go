package vmath

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// TestWinoKernels checks every kernel of this CPU against the scalar
// loops bit for bit, and the scalar loops against the transforms written
// out as matrix products in float64 (Bᵀ·d·B, Aᵀ·M·A, A·dy·Aᵀ, to 1e-5), on tile counts around the vector width, with signed
// zeros, infinities and NaN among the values.
func TestWinoKernels(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	vals := func(k int) []float32 { return specialValues(rng, k) }
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 23, 48} {
		for _, k := range kernels() {
			for _, wide := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/n%d/wide%v", k, n, wide), func(t *testing.T) {
					// Rows of 2n+2 values and more (the scalar tail), or of
					// WinoInputLd(n) and more (the vector kernel's masked
					// tail, whatever the columns past 2n+2 hold); 8 guard
					// values past every destination.
					ld := 2*n + 2 + rng.Intn(3)
					if wide {
						ld = WinoInputLd(n) + rng.Intn(3)
					}
					stride := n + rng.Intn(5)
					rows := vals(3*ld + ld)
					got, want := vals(15*stride+n+8), make([]float32, 15*stride+n+8)
					copy(want, got)
					winoInputWith(k, rows[:3*ld+ld], ld, got[:15*stride+n], stride, n)
					winoInputGo(rows, ld, want, stride, n)
					if !sameBits(got, want) {
						t.Fatalf("input transform differs from the scalar loop")
					}
					src := vals(15*stride + n)
					bias := float32(rng.NormFloat64())
					y0, y1 := vals(2*n+8), vals(2*n+8)
					w0, w1 := append([]float32(nil), y0...), append([]float32(nil), y1...)
					nf := winoOutputWith(k, src, stride, y0[:2*n], y1[:2*n], n, bias)
					wf := winoOutputGo(src, stride, w0[:2*n], w1[:2*n], n, bias)
					if !sameBits(y0, w0) || !sameBits(y1, w1) {
						t.Fatalf("output transform differs from the scalar loop")
					}
					finite := true
					for _, v := range append(y0[:2*n:2*n], y1[:2*n]...) {
						finite = finite && !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0)
					}
					if (nf == 0) != finite || (wf == 0) != finite {
						t.Fatalf("output transform: finiteness sums %v (scalar %v), values all finite: %v", nf, wf, finite)
					}
					gz, wz := vals(15*stride+n+8), make([]float32, 15*stride+n+8)
					copy(wz, gz)
					winoGradWith(k, y0[:2*n], y1[:2*n], gz[:15*stride+n], stride, n)
					winoGradGo(y0, y1, wz, stride, n)
					if !sameBits(gz, wz) {
						t.Fatalf("gradient transform differs from the scalar loop")
					}
				})
			}
		}
	}
	// The scalar loops against the matrices, on finite values.
	bt := [4][4]float64{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}}
	at := [2][4]float64{{1, 1, 1, 0}, {0, 1, -1, -1}}
	const n, ld, stride = 5, 12, 7
	rows := make([]float32, 4*ld)
	for i := range rows {
		rows[i] = float32(rng.NormFloat64())
	}
	v := make([]float32, 16*stride)
	winoInputGo(rows, ld, v, stride, n)
	src := make([]float32, 16*stride)
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	y0, y1 := make([]float32, 2*n), make([]float32, 2*n)
	winoOutputGo(src, stride, y0, y1, n, 0.5)
	z := make([]float32, 16*stride)
	winoGradGo(y0, y1, z, stride, n)
	for tile := 0; tile < n; tile++ {
		for a := 0; a < 4; a++ {
			for b := 0; b < 4; b++ {
				want := 0.0
				for i := 0; i < 4; i++ {
					for j := 0; j < 4; j++ {
						want += bt[a][i] * float64(rows[i*ld+2*tile+j]) * bt[b][j]
					}
				}
				if got := float64(v[(4*a+b)*stride+tile]); math.Abs(got-want) > 1e-5 {
					t.Fatalf("tile %d: (Bᵀ·d·B)[%d][%d] = %v, want %v", tile, a, b, got, want)
				}
			}
		}
		for a := 0; a < 2; a++ {
			for b := 0; b < 2; b++ {
				want := 0.5
				for i := 0; i < 4; i++ {
					for j := 0; j < 4; j++ {
						want += at[a][i] * float64(src[(4*i+j)*stride+tile]) * at[b][j]
					}
				}
				got := float64([2][]float32{y0, y1}[a][2*tile+b])
				if math.Abs(got-want) > 1e-5 {
					t.Fatalf("tile %d: (Aᵀ·M·A)[%d][%d] + bias = %v, want %v", tile, a, b, got, want)
				}
			}
		}
		for a := 0; a < 4; a++ {
			for b := 0; b < 4; b++ {
				want := 0.0 // (A·dy·Aᵀ)[a][b]
				for i := 0; i < 2; i++ {
					for j := 0; j < 2; j++ {
						want += at[i][a] * float64([2][]float32{y0, y1}[i][2*tile+j]) * at[j][b]
					}
				}
				if got := float64(z[(4*a+b)*stride+tile]); math.Abs(got-want) > 1e-5 {
					t.Fatalf("tile %d: (A·dy·Aᵀ)[%d][%d] = %v, want %v", tile, a, b, got, want)
				}
			}
		}
	}
}

// sameBits reports whether a and b hold the same bits (any NaN equal to
// any NaN: the kernels need not keep payloads).
func sameBits(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}

// TestWinoBadLengths checks that the transforms refuse slices too short
// for their tiles with a panic naming the transform, before writing.
func TestWinoBadLengths(t *testing.T) {
	const n, ld, stride = 8, 18, 8
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"WinoInput", func() { WinoInput(make([]float64, 4*ld), ld-1, make([]float64, 16*stride), stride, n) }},
		{"WinoInput", func() { WinoInput(make([]float32, 4*ld), ld, make([]float32, 15*stride), stride, n) }},
		{"WinoOutput", func() {
			WinoOutput(make([]float32, 16*stride), stride, make([]float32, 2*n-1), make([]float32, 2*n), n, 0)
		}},
		{"WinoGrad", func() { WinoGrad(make([]float64, 2*n), make([]float64, 2*n), make([]float64, 16*stride), stride-1, n) }},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), c.name) {
					t.Errorf("%s: recovered %v, want a panic naming it", c.name, r)
				}
			}()
			c.f()
		}()
	}
}

// TestWinoFilter checks WinoFilter's kernels against the scalar loop bit
// for bit (with signed zeros, infinities and NaN among the weights, 8
// guard values past the destination), and the scalar loop against G·g·Gᵀ
// written out in float64.
func TestWinoFilter(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	vals := func(k int) []float32 { return specialValues(rng, k) }
	for _, n := range []int{1, 7, 8, 9, 16, 23, 64} {
		for _, k := range kernels() {
			for _, fs := range []int{9, 9 * 5} { // contiguous filters, and 5 apart (a [m][5] array's column)
				t.Run(fmt.Sprintf("%s/n%d/fs%d", k, n, fs), func(t *testing.T) {
					stride := n + rng.Intn(5)
					w := vals((n-1)*fs + 9)
					got, want := vals(15*stride+n+8), make([]float32, 15*stride+n+8)
					copy(want, got)
					winoFilterWith(k, w, fs, got[:15*stride+n], stride, n)
					for i := 0; i < n; i++ { // the scalar loop on each filter alone
						winoFilterGo(w[i*fs:], 9, want[i:], stride, 1)
					}
					if !sameBits(got, want) {
						t.Fatalf("filter transform differs from the scalar loop")
					}
				})
			}
		}
	}
	g := [4][3]float64{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}}
	const n, stride = 5, 6
	w := make([]float32, 9*n)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	u := make([]float32, 16*stride)
	winoFilterGo(w, 9, u, stride, n)
	for f := 0; f < n; f++ {
		for a := 0; a < 4; a++ {
			for b := 0; b < 4; b++ {
				want := 0.0
				for i := 0; i < 3; i++ {
					for j := 0; j < 3; j++ {
						want += g[a][i] * float64(w[9*f+3*i+j]) * g[b][j]
					}
				}
				if got := float64(u[(4*a+b)*stride+f]); math.Abs(got-want) > 1e-5 {
					t.Fatalf("filter %d: (G·g·Gᵀ)[%d][%d] = %v, want %v", f, a, b, got, want)
				}
			}
		}
	}
}

// TestWinoFilterGrad checks WinoFilterGrad's kernels against the scalar
// loop bit for bit (dw's values added to, its finiteness sums, signed
// zeros, infinities and NaN among the values, 9 guard values past dw),
// and the scalar loop against Gᵀ·dU·G written out in float64.
func TestWinoFilterGrad(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	vals := func(k int, special bool) []float32 {
		d := make([]float32, k)
		for i := range d {
			switch rng.Intn(60) {
			case 0:
				d[i] = float32(math.Copysign(0, -1))
			case 1:
				if special {
					d[i] = float32(math.Inf(1 - 2*rng.Intn(2)))
					continue
				}
				fallthrough
			case 2:
				if special {
					d[i] = float32(math.NaN())
					continue
				}
				fallthrough
			default:
				d[i] = float32(rng.NormFloat64())
			}
		}
		return d
	}
	for _, n := range []int{1, 7, 8, 9, 16, 23, 64} {
		for _, k := range kernels() {
			for _, special := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/n%d/special%v", k, n, special), func(t *testing.T) {
					stride := n + rng.Intn(5)
					du := vals(15*stride+n, special)
					got, want := vals(9*n+9, false), make([]float32, 9*n+9)
					copy(want, got)
					nf := winoFilterGradWith(k, du, stride, got[:9*n], n)
					wf := winoFilterGradGo(du, stride, want, n)
					if !sameBits(got, want) {
						t.Fatalf("filter gradient transform differs from the scalar loop")
					}
					finite := true
					for _, v := range got[:9*n] {
						finite = finite && !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0)
					}
					if (nf == 0) != finite || (wf == 0) != finite {
						t.Fatalf("finiteness sums %v (scalar %v), values all finite: %v", nf, wf, finite)
					}
				})
			}
		}
	}
	g := [4][3]float64{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}}
	const n, stride = 5, 6
	du := vals(16*stride, false)
	dw := vals(9*n, false)
	before := append([]float32(nil), dw...)
	winoFilterGradGo(du, stride, dw, n)
	for f := 0; f < n; f++ {
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				want := float64(before[9*f+3*i+j])
				for a := 0; a < 4; a++ {
					for b := 0; b < 4; b++ {
						want += g[a][i] * float64(du[(4*a+b)*stride+f]) * g[b][j]
					}
				}
				if got := float64(dw[9*f+3*i+j]); math.Abs(got-want) > 1e-5 {
					t.Fatalf("filter %d: dw[%d][%d] = %v, want %v", f, i, j, got, want)
				}
			}
		}
	}
}

// specialValues returns k normal deviates from rng with, about one in 40
// each, negative zeros, infinities of either sign and NaN among them: the
// values a transform kernel must carry through as the scalar loop does.
func specialValues(rng *rand.Rand, k int) []float32 {
	d := make([]float32, k)
	for i := range d {
		switch rng.Intn(40) {
		case 0:
			d[i] = float32(math.Copysign(0, -1))
		case 1:
			d[i] = float32(math.Inf(1 - 2*rng.Intn(2)))
		case 2:
			d[i] = float32(math.NaN())
		default:
			d[i] = float32(rng.NormFloat64())
		}
	}
	return d
}
