package vmath

import (
	"flag"
	"fmt"
	"math"
	"testing"
)

var exhaustive = flag.Bool("exhaustive", false, "check Sigmoid32's kernels on all 2^32 float32 inputs (about 2.5 minutes per kernel on this project's machine)")

// checkSigmoid runs kernel k on x and counts the outputs whose bits differ
// from float32(sigmoid64(float64(x[i]))), reporting the first few.
func checkSigmoid(t *testing.T, k kernel, x []float32) (bad int) {
	t.Helper()
	y := make([]float32, len(x))
	sigmoidWith(k, y, x)
	for i, v := range x {
		want := float32(sigmoid64(float64(v)))
		if math.Float32bits(y[i]) != math.Float32bits(want) {
			if bad < 5 {
				t.Errorf("%v: σ(%v) [%#08x] = %v [%#08x], scalar formula %v [%#08x]", k, v, math.Float32bits(v),
					y[i], math.Float32bits(y[i]), want, math.Float32bits(want))
			}
			bad++
		}
	}
	return bad
}

// sweep checks kernel k on the float32 inputs with bit patterns
// lo, lo+stride, … ≤ hi (both signs given as bit patterns), in chunks.
func sweep(t *testing.T, k kernel, lo, hi, stride uint32) (checked, bad int) {
	t.Helper()
	const chunk = 1 << 16
	x := make([]float32, 0, chunk)
	for b := uint64(lo); b <= uint64(hi); b += uint64(stride) {
		x = append(x, math.Float32frombits(uint32(b)))
		if len(x) == chunk {
			bad += checkSigmoid(t, k, x)
			checked += len(x)
			x = x[:0]
		}
	}
	bad += checkSigmoid(t, k, x)
	return checked + len(x), bad
}

// TestSigmoid32Dense checks every kernel this CPU runs against the scalar
// formula, bit for bit, on every 127th float32 of [−20, 20] by bit pattern
// (over 2^24 inputs, all exponents and mantissa residues mod 127).
func TestSigmoid32Dense(t *testing.T) {
	twenty := math.Float32bits(20)
	const stride = 127
	for _, k := range kernels() {
		t.Run(k.String(), func(t *testing.T) {
			n, bad := 0, 0
			for _, sign := range []uint32{0, 1 << 31} {
				c, b := sweep(t, k, sign, sign|twenty, stride)
				n, bad = n+c, bad+b
			}
			if n < 1<<24 {
				t.Fatalf("checked %d inputs, want ≥ 2^24", n)
			}
			if bad != 0 {
				t.Fatalf("%d of %d inputs differ", bad, n)
			}
		})
	}
}

// TestSigmoid32AllFloat32 checks every kernel on all 2^32 float32 inputs;
// it runs only with -exhaustive.
func TestSigmoid32AllFloat32(t *testing.T) {
	if !*exhaustive {
		t.Skip("runs with -exhaustive")
	}
	for _, k := range kernels()[1:] {
		t.Run(k.String(), func(t *testing.T) {
			n, bad := sweep(t, k, 0, math.MaxUint32, 1)
			if bad != 0 {
				t.Fatalf("%d of %d inputs differ", bad, n)
			}
			t.Logf("%d inputs, all bit-identical", n)
		})
	}
}

// TestSigmoid32Special checks every kernel on signed zeros, infinities,
// NaNs (payloads included), the extreme finite and subnormal float32s,
// and the inputs around which exp(−|x|) or σ(x) leaves float32's normal
// range (±88, ±104) or exp leaves float64's (±708, ±745).
func TestSigmoid32Special(t *testing.T) {
	f := math.Float32frombits
	cases := []struct {
		name string
		x    []float32
	}{
		{"zeros", []float32{0, f(1 << 31)}},
		{"infinities", []float32{float32(math.Inf(1)), float32(math.Inf(-1))}},
		{"NaNs", []float32{f(0x7fc00000), f(0xffc00000), f(0x7f800001), f(0xff812345), f(0x7fffffff), f(0x7fa00000)}},
		{"max", []float32{math.MaxFloat32, -math.MaxFloat32, f(0x7f7ffffe), f(0xff7ffffe)}},
		{"subnormal", []float32{f(1), f(1 | 1<<31), f(2), f(0x007fffff), f(0x807fffff), math.SmallestNonzeroFloat32}},
		{"smallest normal", []float32{f(0x00800000), f(0x80800000)}},
		{"±88", around(88)},
		{"±89", around(89)},
		{"±103.3", around(103.27893)},
		{"±104", around(104)},
		{"±708", around(708.39642)},
		{"±709.78", around(709.78271)},
		{"±745", around(745.13324)},
		{"±1e30", around(1e30)},
		{"integers", []float32{1, -1, 2, -2, 16, -16, 17, -17, 36, -36, 37, -37}},
	}
	for _, k := range kernels() {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", k, c.name), func(t *testing.T) {
				if bad := checkSigmoid(t, k, c.x); bad != 0 {
					t.Fatalf("%d of %d inputs differ", bad, len(c.x))
				}
			})
		}
	}
}

// around lists ±v and the 64 float32s on each side of each.
func around(v float32) []float32 {
	var x []float32
	for _, s := range []float32{v, -v} {
		b := math.Float32bits(s)
		for d := uint32(0); d <= 128; d++ {
			x = append(x, math.Float32frombits(b-64+d))
		}
	}
	return x
}

// TestSigmoid32Lengths checks every kernel on lengths 0..40 and on
// unaligned starts (the vector tail goes through a padded buffer), and
// that it writes dst[:n] only.
func TestSigmoid32Lengths(t *testing.T) {
	const sentinel = -7
	src := make([]float32, 48)
	for i := range src {
		src[i] = float32(i)*0.37 - 9
	}
	for _, k := range kernels() {
		for n := 0; n <= 40; n++ {
			for _, off := range []int{0, 1, 3} {
				x := src[off : off+n]
				y := make([]float32, n+5)
				for i := range y {
					y[i] = sentinel
				}
				sigmoidWith(k, y[1:n+1], x)
				if y[0] != sentinel || y[n+1] != sentinel {
					t.Fatalf("%v, n=%d: wrote outside dst: %v", k, n, y)
				}
				for i, v := range x {
					if want := float32(sigmoid64(float64(v))); math.Float32bits(y[i+1]) != math.Float32bits(want) {
						t.Fatalf("%v, n=%d, offset %d: σ(%v) = %v, want %v", k, n, off, v, y[i+1], want)
					}
				}
			}
		}
	}
}

// TestSigmoid32Active checks that Sigmoid32 runs the best kernel this CPU
// has and gives its results.
func TestSigmoid32Active(t *testing.T) {
	ks := kernels()
	if active != ks[len(ks)-1] {
		t.Fatalf("active kernel %v, want %v", active, ks[len(ks)-1])
	}
	x := around(3)
	y := make([]float32, len(x))
	Sigmoid32(y, x)
	for i, v := range x {
		if want := float32(sigmoid64(float64(v))); math.Float32bits(y[i]) != math.Float32bits(want) {
			t.Fatalf("Sigmoid32: σ(%v) = %v, want %v", v, y[i], want)
		}
	}
}
