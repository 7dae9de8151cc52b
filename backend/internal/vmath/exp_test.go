package vmath

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// expStats counts the kinds of results a check saw, so that the tests can
// assert that they reached math.Exp's special paths.
type expStats struct {
	checked, bad                    int
	inf, zero, subnormal, nan, fin1 int
}

// add records one result y (math.Exp's).
func (s *expStats) add(y float64) {
	s.checked++
	switch {
	case math.IsNaN(y):
		s.nan++
	case math.IsInf(y, 1):
		s.inf++
	case y == 0:
		s.zero++
	case y < 0x1p-1022:
		s.subnormal++
	case y == 1:
		s.fin1++
	}
}

// checkExp runs kernel k on x and counts the outputs whose bits differ
// from math.Exp's, reporting the first few.
func checkExp(t *testing.T, k kernel, x []float64, s *expStats) {
	t.Helper()
	y := make([]float64, len(x))
	expWith(k, y, x)
	for i, v := range x {
		want := math.Exp(v)
		s.add(want)
		if math.Float64bits(y[i]) != math.Float64bits(want) {
			if s.bad < 5 {
				t.Errorf("%v: exp(%v) [%#016x] = %v [%#016x], math.Exp %v [%#016x]", k, v, math.Float64bits(v),
					y[i], math.Float64bits(y[i]), want, math.Float64bits(want))
			}
			s.bad++
		}
	}
}

// sweep64 checks kernel k on the float64s with bit patterns lo,
// lo+stride, … ≤ hi, in chunks.
func sweep64(t *testing.T, k kernel, lo, hi, stride uint64, s *expStats) {
	t.Helper()
	const chunk = 1 << 16
	x := make([]float64, 0, chunk)
	for b := lo; b <= hi && b >= lo; b += stride {
		x = append(x, math.Float64frombits(b))
		if len(x) == chunk {
			checkExp(t, k, x, s)
			x = x[:0]
		}
	}
	checkExp(t, k, x, s)
}

// vectorKernels lists the vector kernels this CPU runs (the scalar one is
// math.Exp itself), skipping t where there are none.
func vectorKernels(t *testing.T) []kernel {
	ks := kernels()[1:]
	if len(ks) == 0 {
		t.Skip("no vector kernel on this CPU")
	}
	return ks
}

// TestExp64Dense checks every vector kernel this CPU runs against math.Exp, bit
// for bit, on evenly strided samples of the float64 bit patterns: of
// [−750, 750] (2^23 a sign, every exponent from the subnormals up with
// odd mantissa strides), of [2^−54, 750] where exp(x) ≠ 1 (2^21 a sign),
// and denser on the ranges where math.Exp overflows early, turns
// subnormal or underflows ([709, 709.79] and [−746, −708], 2^21 each):
// 3·2^23 inputs a kernel.
func TestExp64Dense(t *testing.T) {
	b := math.Float64bits
	top := b(750)
	stride := top>>23 | 1
	tiny := b(0x1p-54)
	mid := (top-tiny)>>21 | 1
	ranges := []struct {
		name           string
		lo, hi, stride uint64
	}{
		{"[0,750]", 0, top, stride},
		{"[-750,-0]", 1 << 63, 1<<63 | top, stride},
		{"[2^-54,750]", tiny, top, mid},
		{"[-750,-2^-54]", 1<<63 | tiny, 1<<63 | top, mid},
		{"[709,709.79]", b(709), b(709.79), (b(709.79)-b(709))>>21 | 1},
		{"[-746,-708]", b(-708), b(-746), (b(-746)-b(-708))>>21 | 1},
	}
	for _, k := range vectorKernels(t) {
		t.Run(k.String(), func(t *testing.T) {
			var s expStats
			for _, r := range ranges {
				sweep64(t, k, r.lo, r.hi, r.stride, &s)
			}
			if s.bad != 0 {
				t.Fatalf("%d of %d inputs differ", s.bad, s.checked)
			}
			if s.checked < 3<<23 || s.inf < 1<<19 || s.zero < 1<<12 || s.subnormal < 1<<20 || s.fin1 < 1<<22 {
				t.Fatalf("sample too thin: %+v", s)
			}
			t.Logf("%d inputs bit-identical (%+v)", s.checked, s)
		})
	}
}

// TestExp64Random checks every vector kernel on 2^20 uniformly random float64
// bit patterns (NaNs with random payloads and huge magnitudes included).
func TestExp64Random(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	x := make([]float64, 1<<20)
	for i := range x {
		x[i] = math.Float64frombits(r.Uint64())
	}
	for _, k := range vectorKernels(t) {
		t.Run(k.String(), func(t *testing.T) {
			var s expStats
			checkExp(t, k, x, &s)
			if s.bad != 0 {
				t.Fatalf("%d of %d inputs differ", s.bad, s.checked)
			}
			if s.nan == 0 || s.inf == 0 || s.zero == 0 {
				t.Fatalf("sample misses NaN, +Inf or 0 results: %+v", s)
			}
		})
	}
}

// TestExp64Special checks every vector kernel on signed zeros, infinities, NaNs
// (payloads and signs included), the extreme finite and subnormal
// inputs, tiny |x|, and 512 float64s on each side of each threshold of
// math.Exp: overflow (709.7827…, and 1023.5·ln2 ≈ 709.44 where its k
// reaches 1024), the smallest normal result (−708.396), the bounds of its
// subnormal path (k = −1023 at −1022.5·ln2, k = −1075 and −1076), the
// smallest subnormal result (−745.133), and where CVTSD2SL saturates
// (−2^31·ln2).
func TestExp64Special(t *testing.T) {
	f := math.Float64frombits
	half := func(k float64) []float64 { return around64(k * math.Ln2) }
	cases := []struct {
		name string
		x    []float64
	}{
		{"zeros", []float64{0, math.Copysign(0, -1)}},
		{"infinities", []float64{math.Inf(1), math.Inf(-1)}},
		{"NaNs", []float64{math.NaN(), f(0x7ff8000000000000), f(0xfff8000000000000), f(0x7ff0000000000001),
			f(0xfff0000000000001), f(0x7ff4000000001234), f(0xfff8000000abcdef), f(0x7fffffffffffffff), f(0xffffffffffffffff)}},
		{"max", []float64{math.MaxFloat64, -math.MaxFloat64, f(0x7feffffffffffffe), f(0xffeffffffffffffe)}},
		{"subnormal", []float64{f(1), f(1 | 1<<63), f(2), f(0x000fffffffffffff), f(0x800fffffffffffff), math.SmallestNonzeroFloat64}},
		{"smallest normal", []float64{f(0x0010000000000000), f(0x8010000000000000)}},
		{"tiny", append(around64(0x1p-54), append(around64(0x1p-53), around64(0x1p-60)...)...)},
		{"overflow 709.78", append(around64(7.09782712893384e+02), around64(math.Log(math.MaxFloat64))...)},
		{"k=1024 (709.44)", half(1023.5)},
		{"k=1023", half(1022.5)},
		{"k=-1022", half(-1021.5)},
		{"smallest normal result (-708.40)", around64(-1022 * math.Ln2)},
		{"k=-1023", half(-1022.5)},
		{"k=-1024", half(-1023.5)},
		{"k=-1075", half(-1074.5)},
		{"smallest subnormal result (-745.13)", around64(-1075 * math.Ln2)},
		{"k=-1076", half(-1075.5)},
		{"k=-1077", half(-1076.5)},
		{"CVTSD2SL saturates", half(-0x1p31)},
		{"±1e300", around64(1e300)},
		{"integers", []float64{1, -1, 2, -2, 16, -16, 100, -100, 700, -700, 709, -709, 710, -710, 745, -745, 746, -746}},
	}
	for _, k := range vectorKernels(t) {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", k, c.name), func(t *testing.T) {
				var s expStats
				checkExp(t, k, c.x, &s)
				if s.bad != 0 {
					t.Fatalf("%d of %d inputs differ", s.bad, len(c.x))
				}
			})
		}
	}
}

// around64 lists ±v and the 512 float64s on each side of each.
func around64(v float64) []float64 {
	var x []float64
	for _, s := range []float64{v, -v} {
		b := math.Float64bits(s)
		for d := uint64(0); d <= 1024; d++ {
			x = append(x, math.Float64frombits(b-512+d))
		}
	}
	return x
}

// expInputs returns n inputs: mostly uniform in [−800, 800], some NaNs,
// infinities, zeros and subnormal results.
func expInputs(r *rand.Rand, n int) []float64 {
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -740, 709.6, -1e-300}
	x := make([]float64, n)
	for i := range x {
		if r.Intn(8) == 0 {
			x[i] = special[r.Intn(len(special))]
		} else {
			x[i] = 1600*r.Float64() - 800
		}
	}
	return x
}

// TestExp64Lengths checks every kernel, and Exp64, on random lengths
// 0..67 and unaligned starts (the tail runs math.Exp), and that they
// write dst[:n] only.
func TestExp64Lengths(t *testing.T) {
	const sentinel = -7
	r := rand.New(rand.NewSource(3))
	src := expInputs(r, 80)
	type run struct {
		name string
		f    func(dst, x []float64)
	}
	var runs []run
	for _, k := range kernels() {
		runs = append(runs, run{k.String(), func(dst, x []float64) { expWith(k, dst, x) }})
	}
	runs = append(runs, run{"Exp64", Exp64})
	for _, ru := range runs {
		for trial := 0; trial < 400; trial++ {
			n, off := r.Intn(68), r.Intn(8)
			if trial < 68 {
				n = trial
			}
			x := src[off : off+n]
			y := make([]float64, n+5)
			for i := range y {
				y[i] = sentinel
			}
			// x may be longer than dst.
			ru.f(y[1:n+1], src[off:])
			if y[0] != sentinel || y[n+1] != sentinel {
				t.Fatalf("%s, n=%d: wrote outside dst: %v", ru.name, n, y)
			}
			for i, v := range x {
				if want := math.Exp(v); math.Float64bits(y[i+1]) != math.Float64bits(want) {
					t.Fatalf("%s, n=%d, offset %d: exp(%v) = %v, want %v", ru.name, n, off, v, y[i+1], want)
				}
			}
		}
	}
}

// TestExp64InPlace checks every kernel, and Exp64, with dst and x the
// same slice.
func TestExp64InPlace(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for _, n := range []int{0, 1, 3, 4, 7, 8, 9, 16, 31, 64, 67, 1000} {
		src := expInputs(r, n)
		for _, k := range append(kernels(), -1) {
			x := append([]float64(nil), src...)
			name := "Exp64"
			if k < 0 {
				Exp64(x, x)
			} else {
				name = k.String()
				expWith(k, x, x)
			}
			for i, v := range src {
				if want := math.Exp(v); math.Float64bits(x[i]) != math.Float64bits(want) {
					t.Fatalf("%s in place, n=%d: exp(%v) = %v, want %v", name, n, v, x[i], want)
				}
			}
		}
	}
}

// TestExp64Active checks that Exp64 runs the best kernel this CPU has.
func TestExp64Active(t *testing.T) {
	ks := kernels()
	if active != ks[len(ks)-1] {
		t.Fatalf("active kernel %v, want %v", active, ks[len(ks)-1])
	}
}
