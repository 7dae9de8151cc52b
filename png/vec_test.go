package png

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/internal/cpu"
)

// vecLengths are the column counts the kernel tests run: every length up
// to 67 (the kernels' tails and their first full steps) and a few large.
func vecLengths() []int {
	ns := make([]int, 0, 72)
	for n := 0; n <= 67; n++ {
		ns = append(ns, n)
	}
	return append(ns, 1000, 4099, 65543)
}

// withVec runs f with the vector kernels on (when the CPU has them) or
// off, restoring the setting after.
func withVec(on bool, f func()) {
	saved := useVec
	useVec = on && saved
	defer func() { useVec = saved }()
	f()
}

// vecData returns n values for a kernel test: Gaussian times scale, and
// where special is set, some of them replaced by ±0, float32 subnormals,
// and huge and tiny values.
func vecData(rng *rand.Rand, n int, scale float64, special bool) []float32 {
	x := make([]float32, n)
	sp := []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -3e-40, 1e30, -1e30, 1e-30}
	for k := range x {
		x[k] = float32(scale * rng.NormFloat64())
		if special && rng.IntN(5) == 0 {
			x[k] = sp[rng.IntN(len(sp))]
		}
	}
	return x
}

// positive returns n values > 0 over decades decades around 1 (where
// special, some of them subnormal, huge or +Inf when inf).
func positive(rng *rand.Rand, n int, decades float64, special, inf bool) []float32 {
	x := make([]float32, n)
	for k := range x {
		x[k] = float32(math.Pow(10, decades*(rng.Float64()-0.5)))
		if special && rng.IntN(6) == 0 {
			sp := []float32{math.SmallestNonzeroFloat32, 1e-38, 3e38, 1}
			if inf {
				sp = append(sp, float32(math.Inf(1)))
			}
			x[k] = sp[rng.IntN(len(sp))]
		}
	}
	return x
}

// sameOrClose reports whether got matches want: the same bits, or within
// tol of scale where both are finite (a sum taken in another order).
func sameOrClose(got, want, scale, tol float64) bool {
	if math.Float64bits(got) == math.Float64bits(want) {
		return true
	}
	if math.IsNaN(got) || math.IsNaN(want) || math.IsInf(got, 0) || math.IsInf(want, 0) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	return math.Abs(got-want) <= tol*scale
}

// TestMetricGramRanges: the Gram pass's m = 2 and m = 3 loops give the
// general loop's bits in Go, and their kernels its sums to rounding
// (relative to the sum of the terms' magnitudes), on random data with
// special values, every length to 67 and a few large, from unaligned
// starts.
func TestMetricGramRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 1))
	for _, m := range []int{2, 3} {
		for _, special := range []bool{false, true} {
			for _, n := range vecLengths() {
				off := rng.IntN(4)
				N := n + off + rng.IntN(3)
				J := NewJacobian(m, N)
				copy(J.Data, vecData(rng, m*N, 1, special))
				P := positive(rng, N, 8, special, false)
				prop := vecData(rng, N, 1, special)
				per := m*m + m
				want := make([]float64, per)
				metricGramRangeM(want, J, P, prop, off, off+n)
				// The magnitudes' sums bound each sum's rounding.
				absJ := J
				absJ.Data = make([]float32, len(J.Data))
				for k, v := range J.Data {
					absJ.Data[k] = float32(math.Abs(float64(v)))
				}
				absX := make([]float32, N)
				for k, v := range prop {
					absX[k] = float32(math.Abs(float64(v)))
				}
				scale := make([]float64, per)
				metricGramRangeM(scale, absJ, P, absX, off, off+n)
				name := fmt.Sprintf("m=%d/special=%v/n=%d", m, special, n)
				got := make([]float64, per)
				withVec(false, func() {
					if m == 2 {
						metricGramRange2(got, J, P, prop, off, off+n)
					} else {
						metricGramRange3(got, J, P, prop, off, off+n)
					}
				})
				for k := range got {
					if math.Float64bits(got[k]) != math.Float64bits(want[k]) {
						t.Errorf("%s: Go loop part[%d] = %v, general loop %v", name, k, got[k], want[k])
					}
				}
				clear(got)
				withVec(true, func() {
					if m == 2 {
						metricGramRange2(got, J, P, prop, off, off+n)
					} else {
						metricGramRange3(got, J, P, prop, off, off+n)
					}
				})
				for k := range got {
					if !sameOrClose(got[k], want[k], scale[k], 0x1p-52*float64(n+8)) {
						t.Errorf("%s: kernel part[%d] = %v, Go loop %v (terms' magnitudes %v)", name, k, got[k], want[k], scale[k])
					}
				}
			}
		}
	}
}

// TestMetricGramKernelExact: on values whose products and sums are exact
// in float64 (small integers times powers of two) the m = 2 and m = 3
// kernels' sums are the Go loop's bits, whatever their order.
func TestMetricGramKernelExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(72, 1))
	for _, m := range []int{2, 3} {
		for _, n := range vecLengths() {
			J := NewJacobian(m, n)
			for k := range J.Data {
				J.Data[k] = float32(rng.IntN(64)-32) / 8
			}
			P, prop := make([]float32, n), make([]float32, n)
			for k := range P {
				P[k] = float32(rng.IntN(16)+1) * 4
				prop[k] = float32(rng.IntN(64) - 32)
			}
			want, got := make([]float64, m*m+m), make([]float64, m*m+m)
			metricGramRangeM(want, J, P, prop, 0, n)
			withVec(true, func() {
				if m == 2 {
					metricGramRange2(got, J, P, prop, 0, n)
				} else {
					metricGramRange3(got, J, P, prop, 0, n)
				}
			})
			if !slices.Equal(got, want) {
				t.Errorf("m=%d n=%d: kernel %v, Go loop %v", m, n, got, want)
			}
		}
	}
}

// TestMetricGramNonFinite: an Inf or NaN in J makes the sums it enters
// non-finite on both paths, so that Constrain's check on K still names it.
func TestMetricGramNonFinite(t *testing.T) {
	for _, bad := range []float32{float32(math.Inf(1)), float32(math.NaN())} {
		for _, at := range []int{0, 7, 8, 30} {
			n := 33
			J := NewJacobian(2, n)
			for k := range J.Data {
				J.Data[k] = 1
			}
			J.Data[at] = bad
			P, prop := make([]float32, n), make([]float32, n)
			for k := range P {
				P[k], prop[k] = 1, 1
			}
			var want, got [6]float64
			withVec(false, func() { metricGramRange2(want[:], J, P, prop, 0, n) })
			withVec(true, func() { metricGramRange2(got[:], J, P, prop, 0, n) })
			for k := range got {
				if !sameOrClose(got[k], want[k], 0, 0) {
					t.Errorf("J[%d] = %v: kernel part[%d] = %v, Go loop %v", at, bad, k, got[k], want[k])
				}
			}
		}
	}
}

// TestVecFollowsCPU: the kernels run exactly where the CPU has AVX-512
// (on amd64), so that the kernel tests here compare the kernels with the
// Go loops there, not the Go loops with themselves.
func TestVecFollowsCPU(t *testing.T) {
	want := cpu.AVX512 && runtime.GOARCH == "amd64"
	if useVec != want {
		t.Errorf("useVec = %v, want %v (AVX-512: %v, GOARCH %s)", useVec, want, cpu.AVX512, runtime.GOARCH)
	}
}

// boxVecCase is a two-task box pass's inputs for a kernel test: N
// columns, the pass on [off, off+n).
type boxVecCase struct {
	name      string
	J         Jacobian
	P, R, x   []float32
	off, n    int
	lam, d, o []float64
	scale     float64
}

// boxVecCases returns random two-task cases of every length in
// vecLengths, plain and with special values: J and prop with ±0,
// subnormals and huge values (NaN in some), the metric over 8 decades
// with subnormal and huge values, the bound over 8 decades with +Inf (no
// bound) among them, and λ, d and ω with zeros.
func boxVecCases(seed uint64) []boxVecCase {
	rng := rand.New(rand.NewPCG(seed, 1))
	var cs []boxVecCase
	for _, kind := range []string{"plain", "special", "nan"} {
		special := kind != "plain"
		for _, n := range vecLengths() {
			off := rng.IntN(4)
			N := n + off + rng.IntN(3)
			J := NewJacobian(2, N)
			copy(J.Data, vecData(rng, 2*N, 1, special))
			c := boxVecCase{
				name: fmt.Sprintf("%s/n=%d", kind, n), J: J, off: off, n: n,
				P: positive(rng, N, 8, special, false), R: positive(rng, N, 8, special, true),
				x:     vecData(rng, N, 0.5, special),
				lam:   []float64{rng.ExpFloat64(), rng.ExpFloat64()},
				d:     []float64{rng.NormFloat64(), rng.NormFloat64()},
				o:     []float64{rng.Float64(), rng.Float64()},
				scale: 2 * rng.Float64(),
			}
			if kind == "nan" {
				for k := 0; k < N; k += 1 + rng.IntN(9) {
					c.J.Data[rng.IntN(2*N)] = float32(math.NaN())
					c.x[k] = float32(math.NaN())
				}
			}
			// The bound holds the proposal (as Constrain requires).
			for k, r := range c.R {
				c.x[k] = float32(max(-float64(r), min(float64(r), float64(c.x[k]))))
			}
			switch rng.IntN(4) {
			case 0:
				c.lam[rng.IntN(2)] = 0
			case 1:
				c.d[rng.IntN(2)] = 0
			case 2:
				c.o[0], c.o[1] = 0, 0
			}
			cs = append(cs, c)
		}
	}
	return cs
}

// TestBoxExtras2Kernel: boxExtras2's kernel counts the weights the
// unbounded update leaves outside the box and tells whether the box
// clipped the min-norm update as the Go loop does, and gives its sums to
// rounding, for every combination of what a pass asks; with NaNs among
// the inputs its sums are NaN where the Go loop's are.
func TestBoxExtras2Kernel(t *testing.T) {
	for _, c := range boxVecCases(73) {
		for flags := 0; flags < 16; flags++ {
			top := flags&extrasTop != 0
			var d, lam []float64
			var x []float32
			if flags&extrasD != 0 {
				d = c.d
			}
			if flags&extrasLam != 0 {
				lam, x = c.lam, c.x
			}
			mn := func() *boxMinNorm {
				if flags&extrasMinNorm == 0 {
					return nil
				}
				return &boxMinNorm{Omega: c.o, Scale: c.scale}
			}
			want, got := make([]float64, 7), make([]float64, 7)
			lo, hi := c.off, c.off+c.n
			withVec(false, func() { boxExtras2(want, c.J, lo, hi, c.P, c.R, top, d, mn(), lam, x) })
			withVec(true, func() { boxExtras2(got, c.J, lo, hi, c.P, c.R, top, d, mn(), lam, x) })
			// The magnitudes of the sums' terms.
			mag := make([]float64, 5)
			for k := lo; k < hi; k++ {
				j0, j1, r, p := float64(c.J.Data[k]), float64(c.J.Data[c.J.N+k]), float64(c.R[k]), float64(c.P[k])
				// The terms Go leaves out (0·Inf) are left out here.
				if j0 != 0 {
					mag[0] += math.Abs(j0 * r)
				}
				if j1 != 0 {
					mag[1] += math.Abs(j1 * r)
				}
				if ds := c.d[0]*j0 + c.d[1]*j1; ds != 0 {
					mag[2] += math.Abs(r * ds)
				}
				um := max(-r, min(r, c.scale*(p*(c.o[0]*j0+c.o[1]*j1))))
				mag[3] += math.Abs(j0 * um)
				mag[4] += math.Abs(j1 * um)
			}
			for i := range got {
				ok := math.Float64bits(got[i]) == math.Float64bits(want[i])
				if i < 5 {
					ok = sameOrClose(got[i], want[i], mag[i], 0x1p-52*float64(c.n+8))
				}
				if i >= 5 && strings.HasPrefix(c.name, "nan") {
					// The clip of a NaN is NaN with bits that depend
					// on the order of its operands.
					continue
				}
				if !ok {
					t.Errorf("%s flags=%d: ex[%d] = %v, Go loop %v", c.name, flags, i, got[i], want[i])
				}
			}
		}
	}
}

// TestBoxCombine2Kernel: boxCombine's m = 2 kernel writes the Go loop's
// bits for every element and reports a non-finite one as it does, for
// zero and nonzero λ_i, with and without the step toward either anchor,
// on every length to 67 and a few large, from unaligned starts (with NaN
// among the inputs: NaN where the Go loop writes NaN).
func TestBoxCombine2Kernel(t *testing.T) {
	for _, c := range boxVecCases(74) {
		for _, tc := range []struct {
			name  string
			lam   []float64
			t     float64
			omega []float64
		}{
			{"λ", c.lam, 0, nil},
			{"λ0=0", []float64{0, c.lam[1]}, 0, nil},
			{"λ1=0", []float64{c.lam[0], 0}, 0, nil},
			{"λ=0", []float64{0, 0}, 0, nil},
			{"toward0", c.lam, 0.3, nil},
			{"towardω", c.lam, 0.3, c.o},
			{"atω", c.lam, 1, c.o},
			{"ω,t=0", c.lam, 0, c.o},
		} {
			want, got := slices.Clone(c.x), slices.Clone(c.x)
			lo, hi := c.off, c.off+c.n
			var okWant, okGot bool
			withVec(false, func() {
				okWant = !boxCombineRange(want, c.J, tc.lam, c.P, c.x, c.R, tc.t, tc.omega, c.scale, lo, hi)
			})
			withVec(true, func() {
				okGot = true
				if c.n >= 8 {
					okGot = !boxCombineVec(got, c.J, tc.lam, c.P, c.x, c.R, tc.t, tc.omega, c.scale, lo, lo+c.n&^7)
				}
				if boxCombineRange(got, c.J, tc.lam, c.P, c.x, c.R, tc.t, tc.omega, c.scale, lo+c.n&^7, hi) {
					okGot = false
				}
			})
			if okGot != okWant {
				t.Errorf("%s %s: kernel reports finite %v, Go loop %v", c.name, tc.name, okGot, okWant)
			}
			for k := range got {
				g, w := got[k], want[k]
				if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
					t.Errorf("%s %s: dst[%d] = %v, Go loop %v", c.name, tc.name, k, g, w)
					break
				}
			}
		}
	}
}

// TestBoxCombineAliasesProp: boxCombine may write the update over prop
// (the training loop's one buffer) on the kernel's path as on Go's.
func TestBoxCombineAliasesProp(t *testing.T) {
	for _, c := range boxVecCases(75)[:70] {
		lam := c.lam
		want := make([]float32, c.J.N)
		boxCombine(want, c.J, lam, c.P, c.x, c.R, 0.25, c.o, c.scale, 1)
		got := slices.Clone(c.x)
		boxCombine(got, c.J, lam, c.P, got, c.R, 0.25, c.o, c.scale, 1)
		if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Errorf("%s: the update written over prop differs", c.name)
		}
	}
}

// TestBoxRange2Kernel: boxRange2's kernel stores the Go loop's ρ bin for
// every weight, counts the same histogram and clipped weights, and gives
// its sums to rounding (relative to the magnitudes of their terms); with
// NaNs among the inputs, b is NaN where the Go loop's is.
func TestBoxRange2Kernel(t *testing.T) {
	for _, c := range boxVecCases(76) {
		nan := strings.HasPrefix(c.name, "nan")
		lo, hi := c.off, c.off+c.n
		w := []float64{0.5 + c.o[0], 1e-3 + c.o[1]}
		for _, d := range [][]float64{nil, c.d} {
			per := boxTotals(2)
			want, got := make([]float64, per), make([]float64, per)
			var hw, hg [boxHists][boxBins]uint32
			bw, bg := make([]uint8, c.J.N), make([]uint8, c.J.N)
			withVec(false, func() {
				boxRange2(want, &hw, c.J, lo, hi, c.lam, w, c.P, c.x, c.R, bw, false, d, nil)
			})
			withVec(true, func() {
				boxRange2(got, &hg, c.J, lo, hi, c.lam, w, c.P, c.x, c.R, bg, false, d, nil)
			})
			mag := make([]float64, per)
			for k := lo; k < hi; k++ {
				j0, j1, r, p, x := float64(c.J.Data[k]), float64(c.J.Data[c.J.N+k]), float64(c.R[k]), float64(c.P[k]), float64(c.x[k])
				u := x + p*(c.lam[0]*j0+c.lam[1]*j1)
				uc := max(-r, min(r, u))
				if uc == u {
					mag[0] += math.Abs(p * j0 * j0)
					mag[1] += math.Abs(p * j1 * j0)
					mag[2] += math.Abs(p * j1 * j1)
					uc = x
				} else {
					mag[5] += (uc - x) * (uc - x) / (2 * p)
				}
				mag[3] += math.Abs(uc * j0)
				mag[4] += math.Abs(uc * j1)
				if d != nil {
					mag[9] += math.Abs(r * (d[0]*j0 + d[1]*j1))
				}
			}
			tol := 0x1p-52 * float64(c.n+8)
			for i := range got {
				if nan && i != 3 && i != 4 {
					// A NaN u's clip decision depends on its bits,
					// which depend on the order of the operands; b
					// is NaN either way.
					continue
				}
				if !sameOrClose(got[i], want[i], mag[i], tol) {
					t.Errorf("%s d=%v: part[%d] = %v, Go loop %v (terms' magnitudes %v)", c.name, d != nil, i, got[i], want[i], mag[i])
				}
			}
			if nan {
				continue
			}
			if !slices.Equal(bg, bw) {
				for k := range bg {
					if bg[k] != bw[k] {
						t.Errorf("%s: bin[%d] = %d, Go loop %d", c.name, k, bg[k], bw[k])
						break
					}
				}
			}
			if hg != hw {
				t.Errorf("%s: histograms differ", c.name)
			}
		}
	}
}

// TestBoxRange2KernelBins: the kernel's ρ bins on the edges of
// boxRatioBin: du and q zero, subnormal, equal significands, infinite,
// and ratios beyond the clamped exponents.
func TestBoxRange2KernelBins(t *testing.T) {
	// One weight a case: j = (j0, 0), λ = 0, w = (1, 1), so u = x,
	// du = |r − |x||, and q = p·|j0|.
	type one struct{ j0, p, r, x float32 }
	inf := float32(math.Inf(1))
	sub := float32(math.SmallestNonzeroFloat32)
	cases := []one{
		{1, 1, 1, 1},        // du = 0
		{0, 1, 1, 0.5},      // q = 0
		{1, 1, inf, 0.5},    // du = +Inf
		{sub, 1, 1, 0.5},    // q subnormal in float32 (normal in float64)
		{1, 1e-38, 1, 0.5},  // q tiny
		{1, 1, 1, 1 - 6e-8}, // du tiny
		{3e38, 3e38, 1, 0},  // q = +Inf
		{1, 1, 2, 1},        // equal significands
		{1, 1, 1.5, 0.25},   // du's significand above q's
		{1, 1, 1.25, 0.5},   // below
		{1e-30, 1e-30, 3e38, 0}, {1e30, 1e30, 1e-30, 0},
	}
	n := len(cases) * 8
	J := NewJacobian(2, n)
	P, R, x := make([]float32, n), make([]float32, n), make([]float32, n)
	for k := 0; k < n; k++ {
		c := cases[(k*7)%len(cases)]
		J.Data[k], P[k], R[k], x[k] = c.j0, c.p, c.r, c.x
	}
	per := boxTotals(2)
	lam, w := []float64{0, 0}, []float64{1, 1}
	var hw, hg [boxHists][boxBins]uint32
	bw, bg := make([]uint8, n), make([]uint8, n)
	withVec(false, func() { boxRange2(make([]float64, per), &hw, J, 0, n, lam, w, P, x, R, bw, false, nil, nil) })
	withVec(true, func() { boxRange2(make([]float64, per), &hg, J, 0, n, lam, w, P, x, R, bg, false, nil, nil) })
	for k := range bg {
		c := cases[(k*7)%len(cases)]
		if bg[k] != bw[k] {
			t.Errorf("%+v: bin %d, Go loop %d", c, bg[k], bw[k])
		}
		du := math.Abs(math.Abs(float64(c.x)) - float64(c.r))
		if want := boxRatioBin(du, float64(c.p)*math.Abs(float64(c.j0))); bw[k] != want {
			t.Errorf("%+v: Go loop's bin %d, boxRatioBin %d", c, bw[k], want)
		}
	}
}

// TestCombineTwoKernel: combineTwo's kernel writes the Go loop's bits
// (with and without e; NaN where it writes NaN) and sums the squares to
// rounding.
func TestCombineTwoKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 1))
	for _, kind := range []string{"plain", "special", "nan"} {
		for _, n := range vecLengths() {
			for _, withE := range []bool{false, true} {
				special := kind != "plain"
				x0, x1 := vecData(rng, n+3, 1, special)[3:], vecData(rng, n+1, 1, special)[1:]
				var e []float32
				if withE {
					e = vecData(rng, n, 1, special)
				}
				if kind == "nan" && n > 0 {
					x0[rng.IntN(n)] = float32(math.NaN())
				}
				a0, a1 := rng.NormFloat64(), rng.NormFloat64()
				if rng.IntN(4) == 0 {
					a0 = 0
				}
				want, got := make([]float32, n), make([]float32, n)
				var ssw, ssg float64
				withVec(false, func() { ssw = combineTwo(want, e, a0, x0, a1, x1, 0.5) })
				withVec(true, func() { ssg = combineTwo(got, e, a0, x0, a1, x1, 0.5) })
				name := fmt.Sprintf("%s/n=%d/e=%v", kind, n, withE)
				for k := range got {
					g, w := got[k], want[k]
					if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
						t.Errorf("%s: d[%d] = %v, Go loop %v", name, k, g, w)
						break
					}
				}
				if !sameOrClose(ssg, ssw, ssw, 0x1p-52*float64(n+8)) {
					t.Errorf("%s: ss = %v, Go loop %v", name, ssg, ssw)
				}
			}
		}
	}
}

// TestOutsideRangeKernel: the kernel finds the first value outside
// (lo, hi] where the Go loop does, for the metric's range (0, MaxFloat32]
// and the bound's (0, +Inf], with each kind of bad value (0, −0, < 0,
// NaN, ±Inf) at every position and none, good subnormal and huge values
// around it.
func TestOutsideRangeKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(78, 1))
	inf := float32(math.Inf(1))
	bads := []float32{0, float32(math.Copysign(0, -1)), -1, float32(math.NaN()), inf, -inf}
	for _, rg := range [][2]float32{{0, math.MaxFloat32}, {0, inf}} {
		for _, n := range vecLengths() {
			if n > 67 {
				n = n%97 + 68
			}
			x := positive(rng, n, 8, true, rg[1] == inf)
			for at := -1; at < n; at++ {
				for _, b := range bads {
					y := slices.Clone(x)
					if at >= 0 {
						y[at] = b
					}
					var want, got int
					withVec(false, func() { want = outsideRange(y, rg[0], rg[1]) })
					withVec(true, func() { got = outsideRange(y, rg[0], rg[1]) })
					if got != want {
						t.Errorf("(%v, %v] n=%d: %v at %d: kernel %d, Go loop %d", rg[0], rg[1], n, b, at, got, want)
					}
					if at >= 0 && !(b > rg[0] && b <= rg[1]) && want != at {
						t.Errorf("(%v, %v] n=%d: %v at %d: found at %d", rg[0], rg[1], n, b, at, want)
					}
					if at < 0 {
						break
					}
				}
			}
		}
	}
}

// TestDot64Kernel: dot64's kernel gives the Go loop's sum to rounding
// (its bits on exact values), every length to 67 and a few large, from
// unaligned starts, with special values and NaN.
func TestDot64Kernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(79, 1))
	for _, kind := range []string{"plain", "special", "nan", "exact"} {
		for _, n := range vecLengths() {
			x, y := vecData(rng, n+2, 1, kind == "special")[2:], vecData(rng, n+1, 1, kind == "special")[1:]
			if kind == "nan" && n > 0 {
				y[rng.IntN(n)] = float32(math.NaN())
			}
			if kind == "exact" {
				for k := range x {
					x[k], y[k] = float32(rng.IntN(64)-32), float32(rng.IntN(64)-32)/4
				}
			}
			var want, got, mag float64
			withVec(false, func() { want = dot64(x, y) })
			withVec(true, func() { got = dot64(x, y) })
			for k := range x {
				mag += math.Abs(float64(x[k]) * float64(y[k]))
			}
			tol := 0x1p-52 * float64(n+8)
			if kind == "exact" {
				tol = 0
			}
			if !sameOrClose(got, want, mag, tol) {
				t.Errorf("%s/n=%d: kernel %v, Go loop %v", kind, n, got, want)
			}
		}
	}
}

// piecesRef is the Newton steps' evaluation of the pieces of the weights
// at positions idx read in place from bm's J, P, prop and R: the general
// loop over the positions, which the loops over the copied values
// (boxCols.pieces) must match bit for bit.
func piecesRef(bm *boxModel, lambda []float64, idx []uint32, h *float64, grad, H []float64) int {
	return piecesRefAbs(bm, lambda, idx, h, grad, H, false)
}

// piecesRefAbs is piecesRef, with abs the sums of the terms' magnitudes
// instead (which bound a sum's rounding in another order).
func piecesRefAbs(bm *boxModel, lambda []float64, idx []uint32, h *float64, grad, H []float64, abs bool) int {
	f := func(v float64) float64 {
		if abs {
			return math.Abs(v)
		}
		return v
	}
	m, n := bm.m, bm.J.N
	col := make([]float64, m)
	clipped := 0
	for _, c := range idx {
		var s float64
		for i := range col {
			col[i] = float64(bm.J.Data[i*n+int(c)])
			s += lambda[i] * col[i]
		}
		x, p, r := float64(bm.prop[c]), 1.0, math.Inf(1)
		if bm.P != nil {
			p = float64(bm.P[c])
		}
		if bm.R != nil {
			r = float64(bm.R[c])
		}
		u := x + p*s
		free := true
		if u > r {
			u, free = r, false
		} else if u < -r {
			u, free = -r, false
		}
		dd := u - x
		if abs {
			*h += math.Abs(s*u) + math.Abs(dd*dd/(2*p))
		} else {
			*h += s*u - dd*dd/(2*p)
		}
		for i, v := range col {
			grad[i] += f(v * u)
		}
		if free {
			for i, v := range col {
				a := p * v
				for j := 0; j < m; j++ {
					H[i*m+j] += f(a * col[j])
				}
			}
		} else {
			clipped++
		}
	}
	return clipped
}

// boxSubtractRef is the round model's subtraction of the pieces of the
// weights at positions idx read in place: the general loop, which
// boxSubtract's over the copied values must match bit for bit.
func boxSubtractRef(q *boxQuad, J Jacobian, idx []uint32, lambda []float64, P, prop, R []float32) {
	m, n := J.M, J.N
	col := make([]float64, m)
	for _, ci := range idx {
		c := int(ci)
		var s float64
		for i := range col {
			col[i] = float64(J.Data[i*n+c])
			s += lambda[i] * col[i]
		}
		x, r, p := float64(prop[c]), float64(R[c]), 1.0
		if P != nil {
			p = float64(P[c])
		}
		u := x + p*s
		uc := max(-r, min(r, u))
		q.n--
		if uc == u {
			for i, v := range col {
				q.b[i] -= x * v
				pv := p * v
				for j := 0; j <= i; j++ {
					q.A[i*m+j] -= pv * col[j]
				}
			}
			continue
		}
		q.clipped--
		for i, v := range col {
			q.b[i] -= uc * v
		}
		dd := uc - x
		q.c0 += dd * dd / (2 * p)
	}
}

// checkPieces checks that the evaluation of the pieces of the weights at
// idx (bm: m, J, P, prop and R set) adds to start (h, grad, H) the bits of
// piecesRef, by the m = 2 or 3 loop and the general one over the values
// copied once (boxModel.cols), and block by block from the positions
// (boxModel.blocks), from position 0 and from a position inside.
func checkPieces(t *testing.T, name string, bm *boxModel, lambda []float64, idx []uint32, start []float64) {
	t.Helper()
	withVec(false, func() { checkPiecesBits(t, name, bm, lambda, idx, start) })
	if m := bm.m; m != 2 && m != 3 {
		return
	}
	// pieces2 and pieces3's kernels: the clipped count, and the sums to
	// rounding.
	m := bm.m
	for _, lo := range []int{0, len(idx) / 3} {
		want, mag := slices.Clone(start), make([]float64, len(start))
		cw := piecesRef(bm, lambda, idx[lo:], &want[0], want[1:1+m], want[1+m:])
		piecesRefAbs(bm, lambda, idx[lo:], &mag[0], mag[1:1+m], mag[1+m:], true)
		var cols boxCols
		cols.fill(bm.J, bm.P, bm.prop, bm.R, idx)
		got := slices.Clone(start)
		var cg int
		withVec(true, func() { cg = cols.pieces(lambda, lo, len(idx), &got[0], got[1:1+m], got[1+m:], make([]float64, m)) })
		for i := range got {
			if cg != cw || !sameOrClose(got[i], want[i], mag[i]+math.Abs(start[i]), 0x1p-52*float64(len(idx)+8)) {
				t.Errorf("%s lo=%d: kernel [%d] = %v (%d clipped), in place %v (%d; terms' magnitudes %v)", name, lo, i, got[i], cg, want[i], cw, mag[i])
			}
		}
	}
}

// checkPiecesBits is checkPieces's test of the Go loops' bits.
func checkPiecesBits(t *testing.T, name string, bm *boxModel, lambda []float64, idx []uint32, start []float64) {
	t.Helper()
	m := bm.m
	same := func(a, b []float64) bool {
		return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
	}
	for _, lo := range []int{0, len(idx) / 3} {
		want := slices.Clone(start)
		cw := piecesRef(bm, lambda, idx[lo:], &want[0], want[1:1+m], want[1+m:])
		var cols boxCols
		cols.fill(bm.J, bm.P, bm.prop, bm.R, idx)
		run := map[string]func(got []float64) int{
			"copied": func(got []float64) int {
				b := *bm
				b.idx, b.cols = idx, &cols
				return b.pieces(0, lambda, lo, len(idx), &got[0], got[1:1+m], got[1+m:], make([]float64, m))
			},
			"blocks": func(got []float64) int {
				b := *bm
				b.idx, b.blocks = idx, make([]boxCols, 1)
				return b.pieces(0, lambda, lo, len(idx), &got[0], got[1:1+m], got[1+m:], make([]float64, m))
			},
			"general": func(got []float64) int {
				return cols.piecesM(lambda, lo, len(idx), &got[0], got[1:1+m], got[1+m:], make([]float64, m))
			},
		}
		for path, f := range run {
			got := slices.Clone(start)
			if cg := f(got); cg != cw || !same(got, want) {
				t.Errorf("%s lo=%d %s: pieces %v (%d clipped), in place %v (%d)", name, lo, path, got, cg, want, cw)
			}
		}
	}
}

// TestBoxPiecesBlocks: the evaluation of more copied weights than a
// block (boxGather) gives the bits of the general loop over the
// positions, from the copied values and block by block, for m = 2, 3
// and 4, with and without a metric and a bound.
func TestBoxPiecesBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(84, 1))
	for _, m := range []int{2, 3, 4} {
		n := 3*boxGather + 77
		J := NewJacobian(m, n)
		copy(J.Data, vecData(rng, m*n, 1, true))
		P := positive(rng, n, 8, true, false)
		R := positive(rng, n, 4, true, true)
		x := vecData(rng, n, 1, true)
		lam := make([]float64, m)
		for i := range lam {
			lam[i] = rng.Float64() * 3
		}
		idx := make([]uint32, 0, n)
		for k := 0; k < n; k++ {
			if rng.IntN(4) > 0 {
				idx = append(idx, uint32(k))
			}
		}
		for _, opt := range []string{"P,R", "R", "P", "none"} {
			bm := &boxModel{m: m, J: J, prop: x}
			if strings.Contains(opt, "P") {
				bm.P = P
			}
			if strings.Contains(opt, "R") {
				bm.R = R
			}
			start := make([]float64, 1+m+m*m)
			for i := range start {
				start[i] = float64(i) - 0.5
			}
			checkPieces(t, fmt.Sprintf("m=%d %s", m, opt), bm, lam, idx, start)
		}
	}
}

// TestBoxPieces2: the m = 2 loops of the Newton steps' evaluations
// (pieces2) and of the round model's subtraction (boxSubtract2) give the
// general loops' bits, with and without a metric and a bound, on random
// positions with special values.
func TestBoxPieces2(t *testing.T) {
	rng := rand.New(rand.NewPCG(80, 1))
	for _, c := range boxVecCases(81) {
		if strings.HasPrefix(c.name, "nan") {
			continue
		}
		idx := make([]uint32, 0, c.n)
		for k := c.off; k < c.off+c.n; k++ {
			if rng.IntN(3) > 0 {
				idx = append(idx, uint32(k))
			}
		}
		for _, opt := range []string{"P,R", "R", "P", "none"} {
			bm := &boxModel{m: 2, J: c.J, prop: c.x}
			if strings.Contains(opt, "P") {
				bm.P = c.P
			}
			if strings.Contains(opt, "R") {
				bm.R = c.R
			}
			start := []float64{0.5, -1, 2, 3, 4, 5, 6} // h, grad, H
			checkPieces(t, c.name+" "+opt, bm, c.lam, idx, start)
		}
		q := func() boxQuad {
			return boxQuad{A: []float64{1, 0, 2, 3}, b: []float64{4, 5}, c0: 6, n: 1000, clipped: 500}
		}
		qw := q()
		boxSubtractRef(&qw, c.J, idx, c.lam, c.P, c.x, c.R)
		var cols boxCols
		cols.fill(c.J, c.P, c.x, c.R, idx)
		for name, sub := range map[string]func(*boxQuad, *boxCols, int, int, []float64){"boxSubtract2": boxSubtract2, "boxSubtractM": boxSubtractM} {
			qg := q()
			sub(&qg, &cols, 0, len(idx), c.lam)
			if fmt.Sprint(qg) != fmt.Sprint(qw) || math.Float64bits(qg.c0) != math.Float64bits(qw.c0) {
				t.Errorf("%s: %s %+v, in place %+v", c.name, name, qg, qw)
			}
		}
	}
}

// TestBoxRange3: boxRange3's Go loop gives boxRangeM's bits for m = 3
// (its +0 terms for a state a weight is not in change no sum, which never
// is −0), its bins, counts and extra sums, and its kernel the same bins,
// counts and extra sums and the sums to rounding, with and without a
// metric, on random data with special values and every length to 67 and
// a few large.
func TestBoxRange3(t *testing.T) {
	rng := rand.New(rand.NewPCG(82, 1))
	for _, special := range []bool{false, true} {
		for _, n := range vecLengths() {
			off := rng.IntN(4)
			N := n + off + rng.IntN(3)
			J := NewJacobian(3, N)
			copy(J.Data, vecData(rng, 3*N, 1, special))
			P, R := positive(rng, N, 8, special, false), positive(rng, N, 8, special, true)
			x := vecData(rng, N, 0.5, special)
			for k, r := range R {
				x[k] = float32(max(-float64(r), min(float64(r), float64(x[k]))))
			}
			lam := []float64{rng.ExpFloat64(), 0, rng.ExpFloat64()}
			w := []float64{1, 0.5, 2}
			d := []float64{1, -1, 0.5}
			mn := func() *boxMinNorm { return &boxMinNorm{Omega: []float64{0.3, 0.2, 0.5}, Scale: 1} }
			// The magnitudes of the sums' terms.
			mag := make([]float64, 10)
			for k := off; k < off+n; k++ {
				j := []float64{float64(J.Data[k]), float64(J.Data[N+k]), float64(J.Data[2*N+k])}
				p, r, xk := float64(P[k]), float64(R[k]), float64(x[k])
				u := xk + p*(lam[0]*j[0]+lam[1]*j[1]+lam[2]*j[2])
				uc := max(-r, min(r, u))
				y := uc
				if uc == u {
					y = xk
					for a, pi := 0, 0; a < 3; a++ {
						for b := 0; b <= a; b++ {
							mag[pi] += math.Abs(p * j[a] * j[b])
							pi++
						}
					}
				} else {
					mag[9] += (uc - xk) * (uc - xk) / (2 * p)
				}
				for a := range 3 {
					mag[6+a] += math.Abs(y * j[a])
				}
			}
			for _, metric := range [][]float32{P, nil} {
				per := boxTotals(3)
				want := make([]float64, per)
				var hw [boxHists][boxBins]uint32
				bw := make([]uint8, N)
				boxRangeM(want, &hw, J, off, off+n, lam, w, metric, x, R, bw, true, d, mn())
				for _, vec := range []bool{false, true} {
					got := make([]float64, per)
					var hg [boxHists][boxBins]uint32
					bg := make([]uint8, N)
					withVec(vec, func() { boxRange3(got, &hg, J, off, off+n, lam, w, metric, x, R, bg, true, d, mn()) })
					name := fmt.Sprintf("special=%v/n=%d/metric=%v/vec=%v", special, n, metric != nil, vec)
					for i := range got {
						ok := math.Float64bits(got[i]) == math.Float64bits(want[i])
						switch {
						case vec && i < 10:
							ok = sameOrClose(got[i], want[i], mag[i], 0x1p-52*float64(n+8))
						case vec && i >= 11 && i < 18:
							// The extra sums: TestBoxExtras3Pieces3.
							ok = true
						}
						if !ok {
							t.Errorf("%s: part[%d] = %v, boxRangeM %v", name, i, got[i], want[i])
						}
					}
					if !slices.Equal(bg, bw) {
						t.Errorf("%s: bins differ", name)
					}
					// The four counts a bin are taken in turn from
					// another weight: their sums are the counts.
					var cw, cg [boxBins]uint32
					for h := range hw {
						for b := range hw[h] {
							cw[b] += hw[h][b]
							cg[b] += hg[h][b]
						}
					}
					if cg != cw {
						t.Errorf("%s: bin counts differ", name)
					}
				}
			}
		}
	}
}

// TestBoxExtras3Pieces3: for m = 3, boxExtras3's Go loop gives
// boxExtras' bits for every combination of what a pass asks, its kernel
// the same counts and the sums to rounding, and pieces3 and
// boxSubtract3 piecesM's and boxSubtractM's bits, with and without a metric and a bound, on random data with special
// values.
func TestBoxExtras3Pieces3(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 1))
	same := func(a, b []float64) bool {
		return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
	}
	for _, special := range []bool{false, true} {
		for _, n := range vecLengths() {
			off := rng.IntN(4)
			N := n + off + rng.IntN(3)
			J := NewJacobian(3, N)
			copy(J.Data, vecData(rng, 3*N, 1, special))
			P, R := positive(rng, N, 8, special, false), positive(rng, N, 8, special, true)
			x := vecData(rng, N, 0.5, special)
			for k, r := range R {
				x[k] = float32(max(-float64(r), min(float64(r), float64(x[k]))))
			}
			lam := []float64{rng.ExpFloat64(), 0, rng.ExpFloat64()}
			name := fmt.Sprintf("special=%v/n=%d", special, n)
			for flags := 0; flags < 16; flags++ {
				var d, l []float64
				var prop []float32
				if flags&extrasD != 0 {
					d = []float64{1, 0, -0.5}
				}
				if flags&extrasLam != 0 {
					l, prop = lam, x
				}
				mn := func() *boxMinNorm {
					if flags&extrasMinNorm == 0 {
						return nil
					}
					return &boxMinNorm{Omega: []float64{0.3, 0.2, 0.5}, Scale: 1.5}
				}
				for _, metric := range [][]float32{P, nil} {
					want, got, vgot := make([]float64, 9), make([]float64, 9), make([]float64, 9)
					boxExtras(want, J, off, off+n, metric, R, flags&extrasTop != 0, d, mn(), l, prop)
					withVec(false, func() { boxExtras3(got, J, off, off+n, metric, R, flags&extrasTop != 0, d, mn(), l, prop) })
					if !same(got, want) {
						t.Errorf("%s flags=%d metric=%v: boxExtras3 %v, boxExtras %v", name, flags, metric != nil, got, want)
					}
					withVec(true, func() { boxExtras3(vgot, J, off, off+n, metric, R, flags&extrasTop != 0, d, mn(), l, prop) })
					// The magnitudes of the sums' terms.
					mag := make([]float64, 7)
					for k := off; k < off+n; k++ {
						j := []float64{float64(J.Data[k]), float64(J.Data[N+k]), float64(J.Data[2*N+k])}
						r, p := float64(R[k]), 1.0
						if metric != nil {
							p = float64(metric[k])
						}
						var ds, so float64
						for a := range 3 {
							if j[a] != 0 {
								mag[a] += math.Abs(j[a] * r)
							}
							ds += []float64{1, 0, -0.5}[a] * j[a]
							so += []float64{0.3, 0.2, 0.5}[a] * j[a]
						}
						if ds != 0 {
							mag[3] += math.Abs(r * ds)
						}
						um := max(-r, min(r, 1.5*(p*so)))
						for a := range 3 {
							mag[4+a] += math.Abs(j[a] * um)
						}
					}
					for i := range vgot {
						ok := math.Float64bits(vgot[i]) == math.Float64bits(want[i])
						if i < 7 {
							ok = sameOrClose(vgot[i], want[i], mag[i], 0x1p-52*float64(n+8))
						}
						if !ok {
							t.Errorf("%s flags=%d metric=%v: kernel ex[%d] = %v, boxExtras %v", name, flags, metric != nil, i, vgot[i], want[i])
						}
					}
				}
			}
			idx := make([]uint32, 0, n)
			for k := off; k < off+n; k++ {
				if rng.IntN(3) > 0 {
					idx = append(idx, uint32(k))
				}
			}
			for _, opt := range []string{"P,R", "R", "P", "none"} {
				bm := &boxModel{m: 3, J: J, prop: x}
				if strings.Contains(opt, "P") {
					bm.P = P
				}
				if strings.Contains(opt, "R") {
					bm.R = R
				}
				start := []float64{0.5, -1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12} // h, grad, H
				checkPieces(t, name+" "+opt, bm, lam, idx, start)
			}
			q := func() boxQuad {
				return boxQuad{A: []float64{1, 0, 0, 2, 3, 0, 4, 5, 6}, b: []float64{7, 8, 9}, c0: 10, n: 1000, clipped: 500}
			}
			qw := q()
			boxSubtractRef(&qw, J, idx, lam, P, x, R)
			var cols boxCols
			cols.fill(J, P, x, R, idx)
			for sname, sub := range map[string]func(*boxQuad, *boxCols, int, int, []float64){"boxSubtract3": boxSubtract3, "boxSubtractM": boxSubtractM} {
				qg := q()
				sub(&qg, &cols, 0, len(idx), lam)
				if !same(qg.A, qw.A) || !same(qg.b, qw.b) || !same([]float64{qg.c0}, []float64{qw.c0}) || qg.n != qw.n || qg.clipped != qw.clipped {
					t.Errorf("%s: %s %+v, in place %+v", name, sname, qg, qw)
				}
			}
		}
	}
}

// TestBoxCombine3Kernel: boxCombine's m = 3 kernel writes the Go loop's
// bits for every element and reports a non-finite one as it does, for
// zero and nonzero λ_i and with and without the step toward either
// anchor, on random data with special values, every length to 67 and a
// few large.
func TestBoxCombine3Kernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(84, 1))
	for _, special := range []bool{false, true} {
		for _, n := range vecLengths() {
			off := rng.IntN(4)
			N := n + off + rng.IntN(3)
			J := NewJacobian(3, N)
			copy(J.Data, vecData(rng, 3*N, 1, special))
			P, R := positive(rng, N, 8, special, false), positive(rng, N, 8, special, true)
			x := vecData(rng, N, 0.5, special)
			for k, r := range R {
				x[k] = float32(max(-float64(r), min(float64(r), float64(x[k]))))
			}
			l := []float64{rng.ExpFloat64(), rng.ExpFloat64(), rng.ExpFloat64()}
			o := []float64{0.3, 0.2, 0.5}
			for _, tc := range []struct {
				name  string
				lam   []float64
				t     float64
				omega []float64
			}{
				{"λ", l, 0, nil},
				{"λ1=0", []float64{l[0], 0, l[2]}, 0, nil},
				{"λ2=0", []float64{l[0], l[1], 0}, 0, nil},
				{"λ=0", []float64{0, 0, 0}, 0, nil},
				{"toward0", l, 0.3, nil},
				{"towardω", l, 0.3, o},
				{"atω", l, 1, o},
			} {
				want, got := slices.Clone(x), slices.Clone(x)
				lo, hi, mid := off, off+n, off+n&^7
				okWant := !boxCombineRange(want, J, tc.lam, P, x, R, tc.t, tc.omega, 1.5, lo, hi)
				okGot := true
				withVec(true, func() {
					if n >= 8 {
						okGot = !boxCombineVec(got, J, tc.lam, P, x, R, tc.t, tc.omega, 1.5, lo, mid)
					}
					if boxCombineRange(got, J, tc.lam, P, x, R, tc.t, tc.omega, 1.5, mid, hi) {
						okGot = false
					}
				})
				name := fmt.Sprintf("special=%v/n=%d/%s", special, n, tc.name)
				if okGot != okWant {
					t.Errorf("%s: kernel reports finite %v, Go loop %v", name, okGot, okWant)
				}
				for k := range got {
					if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
						t.Errorf("%s: dst[%d] = %v, Go loop %v", name, k, got[k], want[k])
						break
					}
				}
			}
		}
	}
}
