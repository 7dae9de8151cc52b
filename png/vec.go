package png

// The vector kernels' arguments (the assembly reads their fields at fixed
// offsets: keep the order and the sizes).

// extras2Args is extras2AVX512's input and output: λ, d, ω and the
// min-norm update's scale, which of the sums to form (flags: 1 top, 2 d,
// 4 the min-norm update's rates, 8 the unbounded update's test), and the
// kernel's answer: the sums per lane (top's two, d's, the two rates), the
// number of weights the unbounded update leaves outside the box, and a
// nonzero qc where the box clipped the min-norm update.
type extras2Args struct {
	l0, l1, d0, d1, o0, o1, scale float64
	flags                         uint64
	lanes                         [5][8]float64
	out                           uint64
	qc                            uint64
}

const (
	extrasTop = 1 << iota
	extrasD
	extrasMinNorm
	extrasLam
)

// combine2Args is combine2AVX512's input: λ, ω, t and 1 − t, the
// min-norm update's scale, and flags: which λ_i are nonzero (the Go loop
// skips a zero λ_i's term), whether t ≠ 0 (the step toward the anchor)
// and whether the anchor is the min-norm update (ω) rather than 0.
type combine2Args struct {
	l0, l1, o0, o1, t, omt, scale float64
	flags                         uint64
}

const (
	combineL0 = 1 << iota
	combineL1
	combineT
	combineOmega
	combineL2
)

// combine3Args is combine3AVX512's input: combine2Args with a third λ_i
// and ω_i (flags: combineL2 where λ_2 ≠ 0).
type combine3Args struct {
	l0, l1, l2, o0, o1, o2, t, omt, scale float64
	flags                                 uint64
}

// box2Args is range2AVX512's input, λ and w, and its answer: the sums of
// the weights' pieces per lane (A00, A10, A11, b0, b1, c0) and the number
// of weights clipped.
type box2Args struct {
	l0, l1, w0, w1 float64
	lanes          [6][8]float64
	clipped        uint64
}

// dot64 is Σ float64(x_c)·float64(y_c) (y at least as long as x): on
// AVX-512 by a kernel that sums in eight lanes, added in order after, and
// the rest in Go, in column order.
func dot64(x, y []float32) float64 {
	y = y[:len(x)]
	var t float64
	done := 0
	if useVec && len(x) >= 8 {
		done = len(x) &^ 7
		var lanes [8]float64
		dot64AVX512(&x[0], &y[0], done, &lanes)
		for _, v := range lanes {
			t += v
		}
	}
	for c := done; c < len(x); c++ {
		t += float64(x[c]) * float64(y[c])
	}
	return t
}

// box3Args is range3AVX512's input, λ and w in eight lanes each, and
// its answer: the sums per lane (A00, A10, A11, A20, A21, A22, b0, b1,
// b2, c0) and the number of weights clipped.
type box3Args struct {
	l0, l1, l2, w0, w1, w2 [8]float64
	lanes                  [10][8]float64
	clipped                uint64
}

// extras3Args is extras3AVX512's input and output (extras2Args for three
// tasks): the sums per lane are top's three, d's and the three rates.
type extras3Args struct {
	l0, l1, l2, d0, d1, d2, o0, o1, o2, scale float64
	flags                                     uint64
	lanes                                     [7][8]float64
	out                                       uint64
	qc                                        uint64
}

// pieces2Args is pieces2AVX512's input, λ, and its answer: the sums per
// lane (h, g0, g1, H00, H01, H10, H11) and the number of weights clipped.
type pieces2Args struct {
	l0, l1  float64
	lanes   [7][8]float64
	clipped uint64
}

// pieces3Args is pieces3AVX512's input, λ, and its answer: the sums per
// lane (h, g0, g1, g2, then H row-major) and the number of weights
// clipped.
type pieces3Args struct {
	l0, l1, l2 float64
	lanes      [13][8]float64
	clipped    uint64
}
