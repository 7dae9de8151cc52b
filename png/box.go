package png

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Constrain's update within a per-coordinate bound: the trust region of an
// optimizer that normalises its step (Adam moves coordinate c by at most
// bound[c] per unit rate, whatever gradient it is handed). The first-order
// metric P = 1/(√v̂+ε) is Adam's response to a small change of its
// gradient; a change large beside √v̂ saturates. Where the gradient has been
// small, P is huge, and the unbounded correction P∘Jᵀλ moved single
// weights by hundreds of Adam steps at once (LeNet2 with a heavily
// weighted drift: |u_c| = 513 where Adam itself moves at most about 1).
//
// With the bound R the problem is
//
//	minimise ½‖u − prop‖²_{P⁻¹}  subject to  Ju ≥ φ, −R ≤ u ≤ R,
//
// whose dual over λ ≥ 0 (m values) minimises the convex, piecewise
// quadratic h(λ) = Σ_c f_c(s_c) − φ·Σλ, s = Jᵀλ, where
// f_c(s) = max over |u| ≤ R_c of s·u − (u − prop_c)²/(2P_c): quadratic in s
// while u_c(λ) = clip(prop + P∘Jᵀλ, −R, R) lies inside the box (c free),
// linear where it is clipped. Its gradient is Ju(λ) − φ1 and its
// generalised Hessian J_F P_F J_Fᵀ over the free coordinates F.
//
// The cost is in the number of weights n, not in m, so boxDual solves h
// in a bounded number of rounds of one pass over the weights each
// (boxMaxRounds; Constrain makes at most constrainMaxPasses passes in all).
// A round's pass at a centre λ₀ evaluates h and ∇h there exactly, which
// confirms a minimiser or accepts the last round's step, and finds, for
// every weight, the radius ρ_c (in λ scaled per task by wᵢ = 1/√K_P,ii)
// within which its state (free, or clipped at either end) cannot change:
// the distance of s_c from its nearest breakpoint over Σᵢ|J_ic|·wᵢ. It
// bins the weights by ρ_c (one bin an octave, one byte a weight), counts
// them per bin, and sums the quadratic each weight contributes in its
// present state. A radius ρ is then chosen so that at most boxCompact(n)
// weights lie within it: these are copied out (their values copied once
// a round into contiguous rows, which the evaluations then stream), and
// the sum less their pieces is one m×m quadratic. The
// model (that quadratic plus the copied weights' exact pieces) is h on
// the ball ‖(λ − λ₀)/w‖∞ ≤ ρ, and near it a Newton model that knows the
// pieces nearest the centre. Damped projected Newton steps on the model
// (each a few m×m solves and a pass over the copied weights only, at most
// n/k of them in a round and 4·n weights read in all rounds together:
// boxNewtonWork) minimise it over λ ≥ 0, giving the next centre; where that
// raised h, the round is made again from the last centre with the steps
// held to the ball, where the model is exact and h falls. On the adversarial
// cases of the tests (metric and bound over eight decades each, every
// coordinate saturated, tasks that nearly cancel) it ends in 3 to 8
// rounds.
//
// When the rounds or the Newton steps' work run out, Constrain falls back on an update that still
// meets the rate (MetricInfo.Inexact; see boxCombine).
//
// A pass costs a few float64 operations a weight and no branch on its
// state: each worker sums its chunk's pieces in registers (the bin counts
// are the only per-weight memory updates besides the bin byte), and the
// chunks' partial sums are added in chunk order, so that Constrain's
// result is the same bits on any number of workers. For two and three
// tasks with a metric (Adam's case) AVX-512 kernels take eight weights at
// a time (range2AVX512, extras2AVX512, combine2AVX512 and their m = 3
// twins; the metric's Gram pass too): the same bins, clip decisions and
// updates as the Go loops, the sums in eight lanes added in order. A
// round's pass then costs about 1.4 CPU ns a weight on 11.2M weights at
// m = 2 (1.7 at m = 3), what a Go loop takes to read the vectors it reads
// (1.5; 2.3), against 11 (15) in the Go loops (BenchmarkBoxRound, one
// worker), and the Gram pass 0.47 (0.64) against 5.6 (8.5) in the general
// loop (BenchmarkMetricGram). The Newton steps' evaluations over the
// copied values run kernels too (pieces2AVX512, pieces3AVX512): 0.5 (0.8)
// CPU ns a copied weight, against 12 (15.5) where the Go loops read them
// in place by position; the round's copy of their values costs about 17
// (BenchmarkBoxEval). More tasks take the general loops.
const (
	// constrainMaxPasses bounds Constrain's passes over the weights with
	// a bound: the metric's Gram matrix; one pass (boxTest, a few
	// operations a weight) that tests the unbounded update against the
	// box and finds the min-norm update's rates within it; boxDual's
	// rounds; and the update itself. Without a bound it makes two; with
	// one the unbounded update stays within, three.
	constrainMaxPasses = 3 + boxMaxRounds
	// boxMaxRounds bounds the rounds (passes over the weights) of all of
	// one Constrain call's boxDual calls together.
	boxMaxRounds = 10
	// boxTol is the tolerance on the dual's projected gradient relative to
	// each task's largest rate within the box, Σ_c |J_ic|·R_c.
	boxTol = 1e-9
	// boxMinEvals is the fewest evaluations a round's Newton steps may
	// make over the copied weights; beyond it they may make as many as
	// keep their work within one pass over max(n, boxSmall) weights.
	boxMinEvals = 4
	// boxSmall is the number of weights below which the work of a round's
	// Newton steps is not worth bounding by n.
	boxSmall = 1 << 18
	// boxMaxEvals caps a round's evaluations whatever their size.
	boxMaxEvals = 200
	// boxNewtonPasses bounds the work of all rounds' Newton steps
	// together in passes' worth of weights (boxNewtonWork). The hardest
	// cases of the tests that end exactly read up to 3.5.
	boxNewtonPasses = 4
)

// boxBins is the number of ρ_c bins: 0 for ρ_c = 0, one an octave for the
// binary exponents −126 … 127 of ρ_c (clamped), and 255 for ρ_c = +Inf (a
// weight whose state no λ changes).
const boxBins = 256

// boxEdge is the lower edge of bin b: every weight in bins ≥ b has
// ρ_c ≥ boxEdge(b).
func boxEdge(b int) float64 {
	switch {
	case b <= 1:
		return 0
	case b >= boxBins-1:
		return math.Inf(1)
	}
	return math.Ldexp(1, b-128)
}

// boxBin is the bin of ρ.
func boxBin(rho float64) uint8 {
	switch {
	case rho == 0:
		return 0
	case math.IsInf(rho, 1):
		return boxBins - 1
	}
	// rho ∈ [2^(e−1), 2^e) for e the biased exponent less 1022 (math.Frexp's,
	// without its call); a subnormal rho clamps to the lowest bin.
	e := int(math.Float64bits(rho)>>52&0x7ff) - 1022
	return uint8(max(-126, min(127, e)) + 127)
}

// boxCompact is the most weights a round copies out: few enough that a
// round's Newton steps cost about one pass over the weights (they make at
// most n/k evaluations over k copied weights).
func boxCompact(n int) int { return max(4096, n/16) }

// boxNewtonWork is the most weights the Newton steps of one Constrain
// call's rounds read in all (an evaluation of a round's model reads each
// copied weight once): boxNewtonPasses passes' worth of n, or of boxSmall
// below it. An evaluation reads a weight's column of J in place, by
// position, and sums its m×m piece: several times a pass's cost a weight.
func boxNewtonWork(n int) int { return boxNewtonPasses * max(n, boxSmall) }

// boxCounter counts one Constrain call's passes over the weights (each a
// read of J and of the per-weight vectors) and boxDual's rounds.
type boxCounter struct {
	passes int
	rounds int
	// evals and work are the Newton steps' evaluations of the round
	// models and the weights they read, over all rounds.
	evals int
	work  int
}

func (c *boxCounter) pass() {
	if c != nil {
		c.passes++
	}
}

// boxQuad is Σ over weights of fixed state of their contribution to h:
// c0 + bᵀλ + ½λᵀAλ (A lower triangle, row-major m×m), with the number of
// weights and of those clipped.
type boxQuad struct {
	A       []float64
	b       []float64
	c0      float64
	n       int
	clipped int
}

func newBoxQuad(m int) boxQuad {
	return boxQuad{A: make([]float64, m*m), b: make([]float64, m)}
}

// boxQuadClone is a copy of q.
func boxQuadClone(q boxQuad) boxQuad {
	q.A, q.b = slices.Clone(q.A), slices.Clone(q.b)
	return q
}

// boxSums is what one round's pass found at its centre: the quadratic of
// every weight's piece of h in the state it is in there (A's lower
// triangle in an m×m array), and the number of weights in each ρ bin. The
// model of the round subtracts the pieces of the weights it copies
// (boxSubtract): keeping a quadratic for every bin instead cost an m×m
// update of a bin's sums in memory for every weight.
type boxSums struct {
	all  boxQuad
	hist [boxBins]int
}

// boxTotals is the number of float64s of a chunk's partial: A's lower
// triangle packed row by row (m(m+1)/2), b (m), c0 and the count of
// clipped weights; then Σ_c |J_ic|·R_c (m), the rate h loses along d (1),
// the min-norm update's rates (m), whether the box clipped it (1), and
// boxTest's count (1).
func boxTotals(m int) int { return m*(m+1)/2 + m + 2 + 2*m + 3 }

// boxHists is the number of counts a chunk keeps for each ρ bin, one
// for each weight's position modulo boxHists (see boxRange2).
const boxHists = 4

// boxRatioBin is the bin of ρ = du/q (du, q ≥ 0; q = 0: ρ = +Inf)
// without a division: ρ ∈ [2^(e−1), 2^e) for e the difference of their
// binary exponents, plus one where du's significand is at least q's. The
// bins of subnormal and infinite operands err low (a weight copied out
// that need not be): du subnormal or q infinite, bin 0; q subnormal, as
// though it were 2^−1022. boxRange2 has it written out.
func boxRatioBin(du, q float64) uint8 {
	const mant = 1<<52 - 1
	db, qb := math.Float64bits(du), math.Float64bits(q)
	de, qe := int(db>>52), int(qb>>52)
	e := de - qe + int((qb&mant-db&mant-1)>>63)
	if qe == 0 {
		e = de - 1
	}
	bin := max(-126, min(127, e)) + 127
	if de == 0 || qe == 0x7ff {
		bin = 0
	}
	if qb == 0 || de == 0x7ff {
		bin = boxBins - 1
	}
	return uint8(bin)
}

// boxMinNorm asks a round's pass for the rates Jũ of the min-norm update
// held within the box, ũ = clip(scale·P∘Jᵀω, −R, R), and whether the box
// clipped it (Rates and Clipped are its answer).
type boxMinNorm struct {
	Omega   []float64
	Scale   float64
	Rates   []float64
	Clipped bool
}

// boxRound is one round's pass at centre lambda: every weight's piece of
// h there, summed, and in bins (one byte a weight) each weight's ρ_c bin,
// counted per bin. It also adds Σ_c |J_ic|·R_c into top when top is not
// nil, returns Σ_c R_c·|J_cᵀd| (the rate h loses along λ + t·d as
// t → ∞) when d is not nil, and answers mn when it is not nil. R must not
// be nil. The columns are cut into chunks (forChunks) whose partial sums,
// in sc, are added in chunk order: the result does not depend on the
// number of workers.
func boxRound(J Jacobian, lambda, w []float64, P, prop, R []float32, sc *boxScratch, workers int, top, d []float64, mn *boxMinNorm) (boxSums, float64) {
	m, n := J.M, J.N
	per := boxTotals(m)
	nc := numChunks(n)
	if cap(sc.parts) < nc*per {
		sc.parts = make([]float64, nc*per)
		sc.hist = make([][boxHists][boxBins]uint32, nc)
	}
	parts, hists := sc.parts[:nc*per], sc.hist[:nc]
	clear(parts)
	clear(hists)
	forChunks(n, workers, func(k, lo, hi int) {
		part := parts[k*per : (k+1)*per]
		if m == 2 {
			boxRange2(part, &hists[k], J, lo, hi, lambda, w, P, prop, R, sc.bins, top != nil, d, mn)
		} else if m == 3 {
			boxRange3(part, &hists[k], J, lo, hi, lambda, w, P, prop, R, sc.bins, top != nil, d, mn)
		} else {
			boxRangeM(part, &hists[k], J, lo, hi, lambda, w, P, prop, R, sc.bins, top != nil, d, mn)
		}
	})
	t := m * (m + 1) / 2
	var sums boxSums
	sums.all = newBoxQuad(m)
	sums.all.n = n
	var asym float64
	if mn != nil {
		mn.Rates, mn.Clipped = make([]float64, m), false
	}
	for k := 0; k < nc; k++ {
		part := parts[k*per : (k+1)*per]
		q, pi := &sums.all, 0
		for i := 0; i < m; i++ {
			for j := 0; j <= i; j++ {
				q.A[i*m+j] += part[pi]
				pi++
			}
		}
		for i := 0; i < m; i++ {
			q.b[i] += part[t+i]
		}
		q.c0 += part[t+m]
		q.clipped += int(part[t+m+1])
		ex := part[t+m+2:]
		for i := 0; i < m && top != nil; i++ {
			top[i] += ex[i]
		}
		asym += ex[m]
		if mn != nil {
			for i := range mn.Rates {
				mn.Rates[i] += ex[m+1+i]
			}
			mn.Clipped = mn.Clipped || ex[2*m+1] != 0
		}
		for _, h := range hists[k] {
			for b, c := range h {
				sums.hist[b] += int(c)
			}
		}
	}
	return sums, asym
}

// boxRange2 is boxRound's work on columns [lo, hi) for m = 2, written out
// and without branches on a weight's state: its piece of h is
// b += y·J_c (y = prop_c where it is free, u_c = ±R_c where clipped),
// A += p·J_cJ_cᵀ where it is free, c0 −= (u_c − prop_c)²/(2p) where it is
// clipped, the selections made on the bits; its distance from its nearest
// breakpoint in u is ||u| − R_c|. With a metric, on AVX-512, a kernel
// takes eight columns at a time (range2AVX512: the same bins and clip
// decisions and counts, its sums in eight lanes added in order at the
// end).
func boxRange2(part []float64, hist *[boxHists][boxBins]uint32, J Jacobian, lo, hi int, lambda, w []float64, P, prop, R []float32, bins []uint8, top bool, d []float64, mn *boxMinNorm) {
	n := J.N
	j0s := J.Data[lo:hi]
	j1s := J.Data[n+lo : n+hi][:len(j0s)]
	xs, rs, bs := prop[lo:hi][:len(j0s)], R[lo:hi][:len(j0s)], bins[lo:hi][:len(j0s)]
	var ps []float32
	if P != nil {
		ps = P[lo:hi][:len(j0s)]
	}
	const mant = 1<<52 - 1
	l0, l1, w0, w1 := lambda[0], lambda[1], w[0], w[1]
	var a0, a1, a2, b0, b1, c0 float64
	var clipped int
	done := 0
	if useVec && ps != nil && len(j0s) >= 8 {
		done = len(j0s) &^ 7
		a := box2Args{l0: l0, l1: l1, w0: w0, w1: w1}
		range2AVX512(&a, &j0s[0], &j1s[0], &ps[0], &rs[0], &xs[0], &bs[0], done, hist)
		for l := 0; l < 8; l++ {
			a0 += a.lanes[0][l]
			a1 += a.lanes[1][l]
			a2 += a.lanes[2][l]
			b0 += a.lanes[3][l]
			b1 += a.lanes[4][l]
			c0 += a.lanes[5][l]
		}
		clipped = int(a.clipped)
	}
	for c := done; c < len(j0s); c++ {
		j0, j1 := float64(j0s[c]), float64(j1s[c])
		x, r, p := float64(xs[c]), float64(rs[c]), 1.0
		if ps != nil {
			p = float64(ps[c])
		}
		u := x + p*(l0*j0+l1*j1)
		uc := max(-r, min(r, u))
		// free = 1 where uc == u (the same bits), else 0, without a
		// branch: a weight's state follows no pattern the branch
		// predictor could learn.
		diff := math.Float64bits(u) ^ math.Float64bits(uc)
		free := 1 - (diff|-diff)>>63
		mask := -free
		clipped += int(1 - free)
		y := math.Float64frombits(math.Float64bits(x)&mask | math.Float64bits(uc)&^mask)
		pf := math.Float64frombits(math.Float64bits(p) & mask)
		dd := math.Float64frombits(math.Float64bits(uc-x) &^ mask)
		pj0, pj1 := pf*j0, pf*j1
		a0 += pj0 * j0
		a1 += pj1 * j0
		a2 += pj1 * j1
		b0 += y * j0
		b1 += y * j1
		c0 -= dd * dd / (2 * p)
		// b := boxRatioBin(du, q), written out to keep the sums in
		// registers.
		db := math.Float64bits(math.Abs(math.Abs(u) - r))
		qb := math.Float64bits(p * (math.Abs(j0)*w0 + math.Abs(j1)*w1))
		de, qe := int(db>>52), int(qb>>52)
		// e+1 where du's significand is at least q's, without a branch.
		e := de - qe + int((qb&mant-db&mant-1)>>63)
		if qe == 0 {
			e = de - 1
		}
		bin := max(-126, min(127, e)) + 127
		if de == 0 || qe == 0x7ff {
			bin = 0
		}
		if qb == 0 || de == 0x7ff {
			bin = boxBins - 1
		}
		b := uint8(bin)
		bs[c] = b
		// Four counts a bin, taken in turn: one count's increments
		// wait on each other when weights in a row share a bin.
		hist[c&3][b]++
	}
	part[0], part[1], part[2], part[3], part[4], part[5], part[6] = a0, a1, a2, b0, b1, c0, float64(clipped)
	if top || d != nil || mn != nil {
		boxExtras2(part[7:], J, lo, hi, P, R, top, d, mn, nil, nil)
	}
}

// boxExtras2 is boxExtras for m = 2, its sums in registers and without a
// branch on a weight's values: a product that could be 0·Inf (a zero
// gradient beside an unbounded weight) is masked to 0 on the bits, as
// boxExtras skips it. With a metric, on AVX-512, a kernel takes eight
// columns at a time (extras2AVX512: its sums in eight lanes, added in
// order at the end; its counts the same).
func boxExtras2(ex []float64, J Jacobian, lo, hi int, P, R []float32, top bool, d []float64, mn *boxMinNorm, lam []float64, prop []float32) {
	n := J.N
	j0s := J.Data[lo:hi]
	j1s := J.Data[n+lo : n+hi][:len(j0s)]
	rs := R[lo:hi][:len(j0s)]
	var ps []float32
	if P != nil {
		ps = P[lo:hi][:len(j0s)]
	}
	var d0, d1, o0, o1, scale float64
	if d != nil {
		d0, d1 = d[0], d[1]
	}
	if mn != nil {
		o0, o1, scale = mn.Omega[0], mn.Omega[1], mn.Scale
	}
	// nonzero is all ones where x ≠ 0 (±0: none), else 0.
	nonzero := func(x float64) uint64 {
		b := math.Float64bits(x) &^ (1 << 63)
		return -((b | -b) >> 63)
	}
	var l0, l1 float64
	var xs []float32
	if lam != nil {
		l0, l1, xs = lam[0], lam[1], prop[lo:hi][:len(j0s)]
	}
	var t0, t1, asym, q0, q1 float64
	var qc uint64
	var out int
	done := 0
	if useVec && ps != nil && len(j0s) >= 8 {
		done = len(j0s) &^ 7
		a := extras2Args{l0: l0, l1: l1, d0: d0, d1: d1, o0: o0, o1: o1, scale: scale}
		var x *float32
		if top {
			a.flags |= extrasTop
		}
		if d != nil {
			a.flags |= extrasD
		}
		if mn != nil {
			a.flags |= extrasMinNorm
		}
		if lam != nil {
			a.flags |= extrasLam
			x = &xs[0]
		}
		extras2AVX512(&a, &j0s[0], &j1s[0], &ps[0], &rs[0], x, done)
		for l := 0; l < 8; l++ {
			t0 += a.lanes[0][l]
			t1 += a.lanes[1][l]
			asym += a.lanes[2][l]
			q0 += a.lanes[3][l]
			q1 += a.lanes[4][l]
		}
		out, qc = int(a.out), a.qc
	}
	for c := done; c < len(j0s); c++ {
		j0, j1, r := float64(j0s[c]), float64(j1s[c]), float64(rs[c])
		if lam != nil {
			p := 1.0
			if ps != nil {
				p = float64(ps[c])
			}
			u := float64(xs[c]) + p*(l0*j0+l1*j1)
			diff := math.Float64bits(u) ^ math.Float64bits(max(-r, min(r, u)))
			out += int((diff | -diff) >> 63)
		}
		if top {
			t0 += math.Float64frombits(math.Float64bits(math.Abs(j0)*r) & nonzero(j0))
			t1 += math.Float64frombits(math.Float64bits(math.Abs(j1)*r) & nonzero(j1))
		}
		if d != nil {
			ds := d0*j0 + d1*j1
			asym += math.Float64frombits(math.Float64bits(r*math.Abs(ds)) & nonzero(ds))
		}
		if mn != nil {
			p := 1.0
			if ps != nil {
				p = float64(ps[c])
			}
			um := scale * (p * (o0*j0 + o1*j1))
			umc := max(-r, min(r, um))
			qc |= math.Float64bits(um) ^ math.Float64bits(umc)
			q0 += j0 * umc
			q1 += j1 * umc
		}
	}
	ex[0], ex[1], ex[2], ex[3], ex[4], ex[6] = t0, t1, asym, q0, q1, float64(out)
	if qc != 0 {
		ex[5] = 1
	}
}

// boxTest is Constrain's pass before the box dual: the number of weights
// the unbounded update prop + P∘Jᵀλ leaves outside ±R, Σ_c |J_ic|·R_c
// added into top, and mn's rates. It forms no ρ bins: where the rate is
// lowered to what the box allows (mn), as it is at nearly every step of
// Adam on the models measured, the dual's first round starts elsewhere.
func boxTest(J Jacobian, lambda []float64, P, prop, R []float32, workers int, top []float64, mn *boxMinNorm) int {
	m, n := J.M, J.N
	per := 2*m + 3
	nc := numChunks(n)
	parts := make([]float64, nc*per)
	forChunks(n, workers, func(k, lo, hi int) {
		ex := parts[k*per : (k+1)*per]
		if m == 2 {
			boxExtras2(ex, J, lo, hi, P, R, true, nil, mn, lambda, prop)
		} else if m == 3 {
			boxExtras3(ex, J, lo, hi, P, R, true, nil, mn, lambda, prop)
		} else {
			boxExtras(ex, J, lo, hi, P, R, true, nil, mn, lambda, prop)
		}
	})
	mn.Rates, mn.Clipped = make([]float64, m), false
	out := 0
	for k := 0; k < nc; k++ {
		ex := parts[k*per : (k+1)*per]
		for i := 0; i < m; i++ {
			top[i] += ex[i]
			mn.Rates[i] += ex[m+1+i]
		}
		mn.Clipped = mn.Clipped || ex[2*m+1] != 0
		out += int(ex[2*m+2])
	}
	return out
}

// boxExtras adds, for columns [lo, hi), what a round's pass is asked
// beside its sums (see boxTotals) into ex.
func boxExtras(ex []float64, J Jacobian, lo, hi int, P, R []float32, top bool, d []float64, mn *boxMinNorm, lam []float64, prop []float32) {
	m, n := J.M, J.N
	for c := lo; c < hi; c++ {
		r := float64(R[c])
		var ds, so, sl float64
		for i := 0; i < m; i++ {
			v := float64(J.Data[i*n+c])
			if top && v != 0 {
				ex[i] += math.Abs(v) * r
			}
			if d != nil {
				ds += d[i] * v
			}
			if mn != nil {
				so += mn.Omega[i] * v
			}
			if lam != nil {
				sl += lam[i] * v
			}
		}
		if lam != nil {
			p := 1.0
			if P != nil {
				p = float64(P[c])
			}
			if math.Abs(float64(prop[c])+p*sl) > r {
				ex[2*m+2]++
			}
		}
		if ds != 0 {
			ex[m] += r * math.Abs(ds)
		}
		if mn != nil {
			p := 1.0
			if P != nil {
				p = float64(P[c])
			}
			um := mn.Scale * (p * so)
			if math.Abs(um) > r {
				um, ex[2*m+1] = math.Copysign(r, um), 1
			}
			for i := 0; i < m; i++ {
				ex[m+1+i] += float64(J.Data[i*n+c]) * um
			}
		}
	}
}

// boxExtras3 is boxExtras for m = 3 as boxExtras2 is for m = 2: its sums
// in registers, without a branch on a weight's values (a term boxExtras
// skips is added as +0 here: no sum changes, as none is ever −0), and
// its clip the same for every value but NaN. With a metric, on AVX-512,
// a kernel takes eight columns at a time (extras3AVX512, as
// extras2AVX512 for m = 2).
func boxExtras3(ex []float64, J Jacobian, lo, hi int, P, R []float32, top bool, d []float64, mn *boxMinNorm, lam []float64, prop []float32) {
	n := J.N
	j0s := J.Data[lo:hi]
	j1s := J.Data[n+lo : n+hi][:len(j0s)]
	j2s := J.Data[2*n+lo : 2*n+hi][:len(j0s)]
	rs := R[lo:hi][:len(j0s)]
	var ps, xs []float32
	if P != nil {
		ps = P[lo:hi][:len(j0s)]
	}
	var d0, d1, d2, o0, o1, o2, scale, l0, l1, l2 float64
	if d != nil {
		d0, d1, d2 = d[0], d[1], d[2]
	}
	if mn != nil {
		o0, o1, o2, scale = mn.Omega[0], mn.Omega[1], mn.Omega[2], mn.Scale
	}
	if lam != nil {
		l0, l1, l2, xs = lam[0], lam[1], lam[2], prop[lo:hi][:len(j0s)]
	}
	// nonzero is all ones where x ≠ 0 (±0: none), else 0.
	nonzero := func(x float64) uint64 {
		b := math.Float64bits(x) &^ (1 << 63)
		return -((b | -b) >> 63)
	}
	masked := func(x float64, mask uint64) float64 { return math.Float64frombits(math.Float64bits(x) & mask) }
	var t0, t1, t2, asym, q0, q1, q2 float64
	var qc uint64
	var out int
	done := 0
	if useVec && ps != nil && len(j0s) >= 8 {
		done = len(j0s) &^ 7
		a := extras3Args{l0: l0, l1: l1, l2: l2, d0: d0, d1: d1, d2: d2, o0: o0, o1: o1, o2: o2, scale: scale}
		var x *float32
		if top {
			a.flags |= extrasTop
		}
		if d != nil {
			a.flags |= extrasD
		}
		if mn != nil {
			a.flags |= extrasMinNorm
		}
		if lam != nil {
			a.flags |= extrasLam
			x = &xs[0]
		}
		extras3AVX512(&a, &j0s[0], &j1s[0], &j2s[0], &ps[0], &rs[0], x, done)
		for l := 0; l < 8; l++ {
			t0 += a.lanes[0][l]
			t1 += a.lanes[1][l]
			t2 += a.lanes[2][l]
			asym += a.lanes[3][l]
			q0 += a.lanes[4][l]
			q1 += a.lanes[5][l]
			q2 += a.lanes[6][l]
		}
		out, qc = int(a.out), a.qc
	}
	for c := done; c < len(j0s); c++ {
		j0, j1, j2, r := float64(j0s[c]), float64(j1s[c]), float64(j2s[c]), float64(rs[c])
		p := 1.0
		if ps != nil {
			p = float64(ps[c])
		}
		if lam != nil {
			var sl float64
			sl += l0 * j0
			sl += l1 * j1
			sl += l2 * j2
			u := float64(xs[c]) + p*sl
			diff := math.Float64bits(u) ^ math.Float64bits(max(-r, min(r, u)))
			out += int((diff | -diff) >> 63)
		}
		if top {
			t0 += masked(math.Abs(j0)*r, nonzero(j0))
			t1 += masked(math.Abs(j1)*r, nonzero(j1))
			t2 += masked(math.Abs(j2)*r, nonzero(j2))
		}
		if d != nil {
			var ds float64
			ds += d0 * j0
			ds += d1 * j1
			ds += d2 * j2
			asym += masked(r*math.Abs(ds), nonzero(ds))
		}
		if mn != nil {
			var so float64
			so += o0 * j0
			so += o1 * j1
			so += o2 * j2
			um := scale * (p * so)
			umc := max(-r, min(r, um))
			qc |= math.Float64bits(um) ^ math.Float64bits(umc)
			q0 += j0 * umc
			q1 += j1 * umc
			q2 += j2 * umc
		}
	}
	ex[0], ex[1], ex[2], ex[3], ex[4], ex[5], ex[6], ex[8] = t0, t1, t2, asym, q0, q1, q2, float64(out)
	if qc != 0 {
		ex[7] = 1
	}
}

// boxRangeM is boxRound's work on columns [lo, hi) for any m (see
// boxRange2).
func boxRangeM(part []float64, hist *[boxHists][boxBins]uint32, J Jacobian, lo, hi int, lambda, w []float64, P, prop, R []float32, bins []uint8, top bool, d []float64, mn *boxMinNorm) {
	m, n := J.M, J.N
	t := m * (m + 1) / 2
	col := make([]float64, m)
	A, bv := part[:t], part[t:t+m]
	var c0 float64
	var clipped int
	for c := lo; c < hi; c++ {
		var s, ws float64
		for i := range col {
			v := float64(J.Data[i*n+c])
			col[i] = v
			s += lambda[i] * v
			ws += math.Abs(v) * w[i]
		}
		x, r, p := float64(prop[c]), float64(R[c]), 1.0
		if P != nil {
			p = float64(P[c])
		}
		u := x + p*s
		uc := max(-r, min(r, u))
		if uc == u {
			k := 0
			for i, v := range col {
				bv[i] += x * v
				pv := p * v
				for j := 0; j <= i; j++ {
					A[k+j] += pv * col[j]
				}
				k += i + 1
			}
		} else {
			clipped++
			for i, v := range col {
				bv[i] += uc * v
			}
			dd := uc - x
			c0 -= dd * dd / (2 * p)
		}
		b := boxRatioBin(math.Abs(math.Abs(u)-r), p*ws)
		bins[c] = b
		hist[c&3][b]++
	}
	part[t+m], part[t+m+1] = c0, float64(clipped)
	if top || d != nil || mn != nil {
		boxExtras(part[t+m+2:], J, lo, hi, P, R, top, d, mn, nil, nil)
	}
}

// boxRange3 is boxRangeM for m = 3 as boxRange2 is for m = 2: its sums
// in registers, without branches on a weight's state (a term of a state
// the weight is not in is added as +0), the bin written out; with a
// metric, on AVX-512, a kernel takes eight columns at a time
// (range3AVX512, as range2AVX512 does for m = 2).
func boxRange3(part []float64, hist *[boxHists][boxBins]uint32, J Jacobian, lo, hi int, lambda, w []float64, P, prop, R []float32, bins []uint8, top bool, d []float64, mn *boxMinNorm) {
	n := J.N
	j0s := J.Data[lo:hi]
	j1s := J.Data[n+lo : n+hi][:len(j0s)]
	j2s := J.Data[2*n+lo : 2*n+hi][:len(j0s)]
	xs, rs, bs := prop[lo:hi][:len(j0s)], R[lo:hi][:len(j0s)], bins[lo:hi][:len(j0s)]
	var ps []float32
	if P != nil {
		ps = P[lo:hi][:len(j0s)]
	}
	const mant = 1<<52 - 1
	l0, l1, l2, w0, w1, w2 := lambda[0], lambda[1], lambda[2], w[0], w[1], w[2]
	var a00, a10, a11, a20, a21, a22, b0, b1, b2, c0 float64
	var clipped int
	done := 0
	if useVec && ps != nil && len(j0s) >= 8 {
		done = len(j0s) &^ 7
		var a box3Args
		for l := range 8 {
			a.l0[l], a.l1[l], a.l2[l], a.w0[l], a.w1[l], a.w2[l] = l0, l1, l2, w0, w1, w2
		}
		range3AVX512(&a, &j0s[0], &j1s[0], &j2s[0], &ps[0], &rs[0], &xs[0], &bs[0], done, hist)
		for l := 0; l < 8; l++ {
			a00 += a.lanes[0][l]
			a10 += a.lanes[1][l]
			a11 += a.lanes[2][l]
			a20 += a.lanes[3][l]
			a21 += a.lanes[4][l]
			a22 += a.lanes[5][l]
			b0 += a.lanes[6][l]
			b1 += a.lanes[7][l]
			b2 += a.lanes[8][l]
			c0 += a.lanes[9][l]
		}
		clipped = int(a.clipped)
	}
	for c := done; c < len(j0s); c++ {
		j0, j1, j2 := float64(j0s[c]), float64(j1s[c]), float64(j2s[c])
		x, r, p := float64(xs[c]), float64(rs[c]), 1.0
		if ps != nil {
			p = float64(ps[c])
		}
		var s float64
		s += l0 * j0
		s += l1 * j1
		s += l2 * j2
		u := x + p*s
		uc := max(-r, min(r, u))
		diff := math.Float64bits(u) ^ math.Float64bits(uc)
		free := 1 - (diff|-diff)>>63
		mask := -free
		clipped += int(1 - free)
		y := math.Float64frombits(math.Float64bits(x)&mask | math.Float64bits(uc)&^mask)
		pf := math.Float64frombits(math.Float64bits(p) & mask)
		dd := math.Float64frombits(math.Float64bits(uc-x) &^ mask)
		pj0, pj1, pj2 := pf*j0, pf*j1, pf*j2
		a00 += pj0 * j0
		a10 += pj1 * j0
		a11 += pj1 * j1
		a20 += pj2 * j0
		a21 += pj2 * j1
		a22 += pj2 * j2
		b0 += y * j0
		b1 += y * j1
		b2 += y * j2
		c0 -= dd * dd / (2 * p)
		var ws float64
		ws += math.Abs(j0) * w0
		ws += math.Abs(j1) * w1
		ws += math.Abs(j2) * w2
		db := math.Float64bits(math.Abs(math.Abs(u) - r))
		qb := math.Float64bits(p * ws)
		de, qe := int(db>>52), int(qb>>52)
		e := de - qe + int((qb&mant-db&mant-1)>>63)
		if qe == 0 {
			e = de - 1
		}
		bin := max(-126, min(127, e)) + 127
		if de == 0 || qe == 0x7ff {
			bin = 0
		}
		if qb == 0 || de == 0x7ff {
			bin = boxBins - 1
		}
		b := uint8(bin)
		bs[c] = b
		hist[c&3][b]++
	}
	copy(part, []float64{a00, a10, a11, a20, a21, a22, b0, b1, b2, c0, float64(clipped)})
	if top || d != nil || mn != nil {
		boxExtras3(part[11:], J, lo, hi, P, R, top, d, mn, nil, nil)
	}
}

// boxSubtract removes from q the pieces of h of c's weights [lo, hi), in
// the state they are in at lambda (the round's centre): what the weights
// a round's model copies leave to its quadratic.
func boxSubtract(q *boxQuad, c *boxCols, lo, hi int, lambda []float64) {
	switch c.m {
	case 2:
		boxSubtract2(q, c, lo, hi, lambda)
	case 3:
		boxSubtract3(q, c, lo, hi, lambda)
	default:
		boxSubtractM(q, c, lo, hi, lambda)
	}
}

// boxSubtract3 is boxSubtractM for m = 3, its sums in registers: the
// same operations in the same order, so the same bits.
func boxSubtract3(q *boxQuad, c *boxCols, lo, hi int, lambda []float64) {
	j0s := c.row(0, lo, hi)
	j1s, j2s := c.row(1, lo, hi)[:len(j0s)], c.row(2, lo, hi)[:len(j0s)]
	xs, ps, rs := c.row(3, lo, hi)[:len(j0s)], c.row(4, lo, hi)[:len(j0s)], c.row(5, lo, hi)[:len(j0s)]
	l0, l1, l2 := lambda[0], lambda[1], lambda[2]
	b0, b1, b2, c0 := q.b[0], q.b[1], q.b[2], q.c0
	a00, a10, a11, a20, a21, a22 := q.A[0], q.A[3], q.A[4], q.A[6], q.A[7], q.A[8]
	clipped := 0
	for t := range j0s {
		v0, v1, v2 := float64(j0s[t]), float64(j1s[t]), float64(j2s[t])
		var s float64
		s += l0 * v0
		s += l1 * v1
		s += l2 * v2
		x, r, p := float64(xs[t]), float64(rs[t]), float64(ps[t])
		u := x + p*s
		uc := max(-r, min(r, u))
		if uc == u {
			b0 -= x * v0
			pv := p * v0
			a00 -= pv * v0
			b1 -= x * v1
			pv = p * v1
			a10 -= pv * v0
			a11 -= pv * v1
			b2 -= x * v2
			pv = p * v2
			a20 -= pv * v0
			a21 -= pv * v1
			a22 -= pv * v2
			continue
		}
		clipped++
		b0 -= uc * v0
		b1 -= uc * v1
		b2 -= uc * v2
		dd := uc - x
		c0 += dd * dd / (2 * p)
	}
	q.b[0], q.b[1], q.b[2], q.c0 = b0, b1, b2, c0
	q.A[0], q.A[3], q.A[4], q.A[6], q.A[7], q.A[8] = a00, a10, a11, a20, a21, a22
	q.n -= len(j0s)
	q.clipped -= clipped
}

// boxSubtract2 is boxSubtractM for m = 2, its sums in registers: the
// same operations in the same order, so the same bits.
func boxSubtract2(q *boxQuad, c *boxCols, lo, hi int, lambda []float64) {
	j0s := c.row(0, lo, hi)
	j1s := c.row(1, lo, hi)[:len(j0s)]
	xs, ps, rs := c.row(2, lo, hi)[:len(j0s)], c.row(3, lo, hi)[:len(j0s)], c.row(4, lo, hi)[:len(j0s)]
	l0, l1 := lambda[0], lambda[1]
	b0, b1, a00, a10, a11, c0 := q.b[0], q.b[1], q.A[0], q.A[2], q.A[3], q.c0
	clipped := 0
	for t := range j0s {
		v0, v1 := float64(j0s[t]), float64(j1s[t])
		var s float64
		s += l0 * v0
		s += l1 * v1
		x, r, p := float64(xs[t]), float64(rs[t]), float64(ps[t])
		u := x + p*s
		uc := max(-r, min(r, u))
		if uc == u {
			b0 -= x * v0
			pv := p * v0
			a00 -= pv * v0
			b1 -= x * v1
			pv = p * v1
			a10 -= pv * v0
			a11 -= pv * v1
			continue
		}
		clipped++
		b0 -= uc * v0
		b1 -= uc * v1
		dd := uc - x
		c0 += dd * dd / (2 * p)
	}
	q.b[0], q.b[1], q.A[0], q.A[2], q.A[3], q.c0 = b0, b1, a00, a10, a11, c0
	q.n -= len(j0s)
	q.clipped -= clipped
}

// boxSubtractM is boxSubtract for any m.
func boxSubtractM(q *boxQuad, c *boxCols, lo, hi int, lambda []float64) {
	m := c.m
	xs, ps, rs := c.row(m, lo, hi), c.row(m+1, lo, hi), c.row(m+2, lo, hi)
	col := make([]float64, m)
	for t := range xs {
		var s float64
		for i := range col {
			col[i] = float64(c.data[i*c.k+lo+t])
			s += lambda[i] * col[i]
		}
		x, r, p := float64(xs[t]), float64(rs[t]), float64(ps[t])
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

// boxModel is h on one round's ball: the quadratic of the weights whose
// state is fixed there plus the exact pieces of the copied ones.
type boxModel struct {
	m   int
	phi float64
	q   boxQuad // A filled in full (symmetric)
	// idx are the positions of the weights within the ball. Where there
	// are at most boxCompact(n) of them (every round but one whose
	// weights all sit on a breakpoint, an update at Adam's bound), their
	// values are copied once into cols, which every evaluation then
	// streams; otherwise (cols nil) each evaluation copies them a block
	// at a time into its chunk's blocks[k] (copying them all took
	// (m+3)·4 bytes a weight, and then that was every weight).
	idx     []uint32
	cols    *boxCols
	blocks  []boxCols // one per chunk of positions, where cols is nil
	J       Jacobian
	P, R    []float32
	prop    []float32
	col     []float64 // one weight's column of J
	evals   int
	cnt     *boxCounter
	workers int // of an evaluation over more than one chunk of positions
}

// boxBlocksAlways makes every round read its copied weights block by
// block from their positions, as one with more than boxCompact(n) of
// them does (the tests compare the two).
var boxBlocksAlways = false

// boxGather is the number of weights an evaluation that reads them in
// place copies at a time into its chunk's block (boxModel.blocks).
const boxGather = 512

// boxCols holds the values of k weights contiguously, in the order of
// their positions: J's m rows, then prop, P and R (1 and +Inf where P or
// R is nil: their float64 values are those the loops take for none), k
// values each, in data.
type boxCols struct {
	m, k int
	data []float32
}

// row returns positions [lo, hi) of row i of c: J's rows 0 … m−1, then
// prop (m), P (m+1) and R (m+2).
func (c *boxCols) row(i, lo, hi int) []float32 {
	return c.data[i*c.k+lo : i*c.k+hi]
}

// fill copies into c the values of the m-row J, P, prop and R at the
// positions idx (P or R nil: ones, +Inf), growing c.data if needed.
func (c *boxCols) fill(J Jacobian, P, prop, R []float32, idx []uint32) {
	m, k, n := J.M, len(idx), J.N
	c.m, c.k = m, k
	if cap(c.data) < (m+3)*k {
		c.data = make([]float32, (m+3)*k)
	}
	c.data = c.data[:(m+3)*k]
	for i := 0; i < m; i++ {
		dst, src := c.row(i, 0, k), J.Data[i*n:(i+1)*n]
		for t, ci := range idx {
			dst[t] = src[ci]
		}
	}
	for i, v := range [][]float32{prop, P, R} {
		dst := c.row(m+i, 0, k)
		if v == nil {
			fill := float32(1)
			if i == 2 {
				fill = float32(math.Inf(1))
			}
			for t := range dst {
				dst[t] = fill
			}
			continue
		}
		for t, ci := range idx {
			dst[t] = v[ci]
		}
	}
}

// boxEval is h, ∇h and the generalised Hessian at one λ.
type boxEval struct {
	h       float64
	grad    []float64 // Ju(λ) − φ
	H       []float64 // J_F P_F J_Fᵀ (m×m)
	clipped int       // coordinates at the bound
}

func (bm *boxModel) eval(lambda []float64) boxEval {
	bm.evals++
	if bm.cnt != nil {
		bm.cnt.evals++
		bm.cnt.work += len(bm.idx)
	}
	m := bm.m
	e := boxEval{grad: make([]float64, m), H: append([]float64(nil), bm.q.A...), clipped: bm.q.clipped}
	e.h = bm.q.c0
	for i := 0; i < m; i++ {
		var al float64
		for j := 0; j < m; j++ {
			al += bm.q.A[i*m+j] * lambda[j]
		}
		e.grad[i] = bm.q.b[i] + al
		e.h += lambda[i] * (bm.q.b[i] + 0.5*al)
	}
	if nc := numChunks(len(bm.idx)); nc == 1 {
		e.clipped += bm.pieces(0, lambda, 0, len(bm.idx), &e.h, e.grad, e.H, bm.col)
	} else {
		// The copied weights' pieces per chunk of positions, added in
		// chunk order: the same bits on any number of workers.
		stride := 1 + 2*m + m*m
		parts := make([]float64, nc*stride)
		clipped := make([]int, nc)
		forChunks(len(bm.idx), bm.workers, func(k, lo, hi int) {
			p := parts[k*stride : (k+1)*stride]
			clipped[k] = bm.pieces(k, lambda, lo, hi, &p[0], p[1:1+m], p[1+2*m:], p[1+m:1+2*m])
		})
		for k := 0; k < nc; k++ {
			p := parts[k*stride : (k+1)*stride]
			e.h += p[0]
			for i := 0; i < m; i++ {
				e.grad[i] += p[1+i]
			}
			for i, v := range p[1+2*m:] {
				e.H[i] += v
			}
			e.clipped += clipped[k]
		}
	}
	for i := 0; i < m; i++ {
		e.grad[i] -= bm.phi
		e.h -= bm.phi * lambda[i]
	}
	return e
}

// pieces adds the pieces of the copied weights at positions [lo, hi) of
// idx (chunk k of them) at lambda to h, grad and H (col: scratch for one
// weight's column of J) in the order of their positions, and returns the
// number of them clipped. Whether the values come from cols or block by
// block from blocks[k], the Go loops' sums are the same operations in the
// same order: the same bits; the kernels' lanes are added to them once a
// block there, a difference of rounding alone.
func (bm *boxModel) pieces(k int, lambda []float64, lo, hi int, h *float64, grad, H, col []float64) int {
	if bm.cols != nil {
		return bm.cols.pieces(lambda, lo, hi, h, grad, H, col)
	}
	blk := &bm.blocks[k]
	clipped := 0
	for b0 := lo; b0 < hi; b0 += boxGather {
		b1 := min(hi, b0+boxGather)
		blk.fill(bm.J, bm.P, bm.prop, bm.R, bm.idx[b0:b1])
		clipped += blk.pieces(lambda, 0, b1-b0, h, grad, H, col)
	}
	return clipped
}

// pieces adds the pieces of c's weights [lo, hi) at lambda to h, grad and
// H (col: scratch for one weight's column of J, m > 3) and returns the
// number of them clipped.
func (c *boxCols) pieces(lambda []float64, lo, hi int, h *float64, grad, H, col []float64) int {
	switch c.m {
	case 2:
		return c.pieces2(lambda, lo, hi, h, grad, H)
	case 3:
		return c.pieces3(lambda, lo, hi, h, grad, H)
	}
	return c.piecesM(lambda, lo, hi, h, grad, H, col)
}

// pieces3 is piecesM for m = 3, its sums in registers: the same
// operations in the same order, so the same bits; on AVX-512 a kernel
// takes eight weights at a time (see pieces2).
func (c *boxCols) pieces3(lambda []float64, lo, hi int, h *float64, grad, H []float64) int {
	j0s := c.row(0, lo, hi)
	j1s, j2s := c.row(1, lo, hi)[:len(j0s)], c.row(2, lo, hi)[:len(j0s)]
	xs, ps, rs := c.row(3, lo, hi)[:len(j0s)], c.row(4, lo, hi)[:len(j0s)], c.row(5, lo, hi)[:len(j0s)]
	l0, l1, l2 := lambda[0], lambda[1], lambda[2]
	hv, g0, g1, g2 := *h, grad[0], grad[1], grad[2]
	H = H[:9]
	h00, h01, h02, h10, h11, h12, h20, h21, h22 := H[0], H[1], H[2], H[3], H[4], H[5], H[6], H[7], H[8]
	clipped := 0
	done := 0
	if useVec && len(j0s) >= 8 {
		done = len(j0s) &^ 7
		a := pieces3Args{l0: l0, l1: l1, l2: l2}
		pieces3AVX512(&a, &j0s[0], &j1s[0], &j2s[0], &xs[0], &ps[0], &rs[0], done)
		for l := 0; l < 8; l++ {
			hv += a.lanes[0][l]
			g0 += a.lanes[1][l]
			g1 += a.lanes[2][l]
			g2 += a.lanes[3][l]
			h00 += a.lanes[4][l]
			h01 += a.lanes[5][l]
			h02 += a.lanes[6][l]
			h10 += a.lanes[7][l]
			h11 += a.lanes[8][l]
			h12 += a.lanes[9][l]
			h20 += a.lanes[10][l]
			h21 += a.lanes[11][l]
			h22 += a.lanes[12][l]
		}
		clipped = int(a.clipped)
	}
	for t := done; t < len(j0s); t++ {
		c0, c1, c2 := float64(j0s[t]), float64(j1s[t]), float64(j2s[t])
		var s float64
		s += l0 * c0
		s += l1 * c1
		s += l2 * c2
		x, p, r := float64(xs[t]), float64(ps[t]), float64(rs[t])
		u := x + p*s
		free := true
		if u > r {
			u, free = r, false
		} else if u < -r {
			u, free = -r, false
		}
		dd := u - x
		hv += s*u - dd*dd/(2*p)
		g0 += c0 * u
		g1 += c1 * u
		g2 += c2 * u
		if free {
			a0, a1, a2 := p*c0, p*c1, p*c2
			h00 += a0 * c0
			h01 += a0 * c1
			h02 += a0 * c2
			h10 += a1 * c0
			h11 += a1 * c1
			h12 += a1 * c2
			h20 += a2 * c0
			h21 += a2 * c1
			h22 += a2 * c2
		} else {
			clipped++
		}
	}
	*h, grad[0], grad[1], grad[2] = hv, g0, g1, g2
	H[0], H[1], H[2], H[3], H[4], H[5], H[6], H[7], H[8] = h00, h01, h02, h10, h11, h12, h20, h21, h22
	return clipped
}

// pieces2 is piecesM for m = 2, its sums in registers: the same
// operations in the same order, so the same bits; on AVX-512 a kernel
// takes eight weights at a time (each weight's terms the Go loop's bits,
// the sums in eight lanes added in order after: they differ from the
// loop's by rounding alone), the rest in Go.
func (c *boxCols) pieces2(lambda []float64, lo, hi int, h *float64, grad, H []float64) int {
	j0s := c.row(0, lo, hi)
	j1s := c.row(1, lo, hi)[:len(j0s)]
	xs, ps, rs := c.row(2, lo, hi)[:len(j0s)], c.row(3, lo, hi)[:len(j0s)], c.row(4, lo, hi)[:len(j0s)]
	l0, l1 := lambda[0], lambda[1]
	hv, g0, g1 := *h, grad[0], grad[1]
	H = H[:4]
	h00, h01, h10, h11 := H[0], H[1], H[2], H[3]
	clipped := 0
	done := 0
	if useVec && len(j0s) >= 8 {
		done = len(j0s) &^ 7
		a := pieces2Args{l0: l0, l1: l1}
		pieces2AVX512(&a, &j0s[0], &j1s[0], &xs[0], &ps[0], &rs[0], done)
		for l := 0; l < 8; l++ {
			hv += a.lanes[0][l]
			g0 += a.lanes[1][l]
			g1 += a.lanes[2][l]
			h00 += a.lanes[3][l]
			h01 += a.lanes[4][l]
			h10 += a.lanes[5][l]
			h11 += a.lanes[6][l]
		}
		clipped = int(a.clipped)
	}
	for t := done; t < len(j0s); t++ {
		c0, c1 := float64(j0s[t]), float64(j1s[t])
		var s float64
		s += l0 * c0
		s += l1 * c1
		x, p, r := float64(xs[t]), float64(ps[t]), float64(rs[t])
		u := x + p*s
		free := true
		if u > r {
			u, free = r, false
		} else if u < -r {
			u, free = -r, false
		}
		dd := u - x
		hv += s*u - dd*dd/(2*p)
		g0 += c0 * u
		g1 += c1 * u
		if free {
			a0, a1 := p*c0, p*c1
			h00 += a0 * c0
			h01 += a0 * c1
			h10 += a1 * c0
			h11 += a1 * c1
		} else {
			clipped++
		}
	}
	*h, grad[0], grad[1] = hv, g0, g1
	H[0], H[1], H[2], H[3] = h00, h01, h10, h11
	return clipped
}

// piecesM is pieces for any m.
func (c *boxCols) piecesM(lambda []float64, lo, hi int, h *float64, grad, H, col []float64) int {
	m := c.m
	xs, ps, rs := c.row(m, lo, hi), c.row(m+1, lo, hi), c.row(m+2, lo, hi)
	clipped := 0
	for t := range xs {
		var s float64
		for i := range col {
			col[i] = float64(c.data[i*c.k+lo+t])
			s += lambda[i] * col[i]
		}
		x, p, r := float64(xs[t]), float64(ps[t]), float64(rs[t])
		u := x + p*s
		free := true
		if u > r {
			u, free = r, false
		} else if u < -r {
			u, free = -r, false
		}
		dd := u - x
		*h += s*u - dd*dd/(2*p)
		for i, v := range col {
			grad[i] += v * u
		}
		if free {
			for i, v := range col {
				a := p * v
				for j := 0; j < m; j++ {
					H[i*m+j] += a * col[j]
				}
			}
		} else {
			clipped++
		}
	}
	return clipped
}

// boxScratch is the memory of one Constrain call's boxDual calls, a
// number of bytes a weight (ConstrainScratchBytes): each weight's ρ bin,
// the positions of the weights a round's model copies, their values
// (at most boxCompact(n) of them) or a block of them per chunk, and the
// chunks' partial sums of a round's pass.
type boxScratch struct {
	bins   []uint8
	idx    []uint32
	cols   boxCols   // the copied weights' values (boxModel.cols)
	blocks []boxCols // per chunk, where they are read in place
	parts  []float64
	hist   [][boxHists][boxBins]uint32
}

// newBoxScratch allocates the bins; the positions grow to the most
// weights a round copies (boxCompact(n), or all those on a breakpoint).
func newBoxScratch(n int) *boxScratch { return &boxScratch{bins: make([]uint8, n)} }

// ConstrainScratchBytes is the most memory a Constrain call with a bound
// allocates beside its arguments for m tasks and n weights: five bytes a
// weight (boxScratch: a ρ bin and a 32-bit position each); the values of
// the weights a round copies, (m+3)·4 bytes for each of at most
// boxCompact(n) (1.25 bytes a weight at m = 2), or a block of boxGather
// of them per chunk; and, for the m×m quadratics of the ρ bins of each
// chunk of a pass (at most maxChunks of them) and the rest of the dual,
// boxBins·(m²+m+4)·8 bytes a chunk (20 KiB at m = 2). A training loop's
// memory plan adds it to the vectors it holds.
func ConstrainScratchBytes(m, n int) int64 {
	return 5*int64(n) + int64(m+3)*4*int64(boxCompact(n)+numChunks(n)*boxGather) +
		int64(boxBins)*int64(m*m+m+4)*8*int64(numChunks(n)+4)
}

// boxResult is what boxDual found: λ, the coordinates at the bound there,
// the task rates Ju(λ), and whether λ is the minimiser (false when the
// rounds ran out first: λ is then the best point a pass evaluated).
type boxResult struct {
	lambda  []float64
	clipped int
	rates   []float64
	done    bool
}

// boxDual minimises h over λ ≥ 0 from lambda (the unbounded problem's
// solution) in at most the rounds left in cnt, with wᵢ = 1/√K_ii scaling
// each task's λ. Each round's pass evaluates h exactly at its centre
// (every weight's state known), which is how a minimiser is confirmed and
// a step is accepted. The step a round proposes minimises the model of h
// with every weight but the copied ones held in its state at the centre:
// first over all λ ≥ 0 (a Newton step that knows the pieces nearest the
// centre); where that does not lower h, over the ball on which the model
// is exact, which always does. It reports ErrUnbounded when the rate φ is
// out of reach within the box: h falls without bound along the last
// round's step (a certificate: Σ_c R_c·|J_cᵀd| < φ·Σd), or every weight
// was copied and h has no minimiser.
func boxDual(J Jacobian, lambda []float64, w []float64, P, prop, R []float32, phi float64, workers int, cnt *boxCounter, sc *boxScratch, top []float64) (boxResult, error) {
	m, n := J.M, J.N
	lambda = append([]float64(nil), lambda...)
	var tol, step []float64
	bins := sc.bins
	kmax := boxCompact(n)
	var best boxResult
	bestH := math.Inf(1)
	var prev []float64 // the last accepted centre
	ball := false      // this round steps within the ball
	for cnt.rounds < boxMaxRounds {
		cnt.rounds++
		var sums boxSums
		var asym float64
		cnt.pass()
		var topArg []float64
		if top == nil {
			top = make([]float64, m)
			topArg = top
		}
		sums, asym = boxRound(J, lambda, w, P, prop, R, sc, workers, topArg, step, nil)
		if tol == nil {
			tol = make([]float64, m)
			for i := range tol {
				tol[i] = boxTol * (top[i] + math.Abs(phi))
			}
		}
		// h, ∇h at the centre, exactly: every weight's piece there.
		all := sums.all
		hc, gc := boxQuadAt(&all, lambda, phi)
		if math.IsNaN(hc) || math.IsInf(hc, 0) {
			return best, fmt.Errorf("png: Constrain within the bound: dual value %v: %w", hc, ErrNonFinite)
		}
		stationary := boxStationary(lambda, gc, tol)
		if hc > bestH && prev != nil && !stationary {
			// The free step raised h: step from the last centre within
			// the ball instead. A centre that meets the optimality
			// conditions is the minimiser whatever h's last digits say
			// (h is convex): at the minimiser two centres' h differ by
			// rounding alone.
			lambda, prev, ball, step = prev, nil, true, nil
			continue
		}
		bestH = hc
		best = boxResult{lambda: slices.Clone(lambda), clipped: all.clipped, rates: make([]float64, m)}
		for i := range best.rates {
			best.rates[i] = gc[i] + phi
		}
		if stationary {
			best.done = true
			return best, nil
		}
		if step != nil {
			var sd float64
			for _, v := range step {
				sd += v
			}
			if asym < phi*sd*(1-1e-9) {
				return best, fmt.Errorf("png: Constrain: rate φ = %g out of reach within the bound (the dual falls without bound along %.3g): %w", phi, step, ErrUnbounded)
			}
		}
		// The ball: the widest radius with at most kmax weights within.
		cut, k := 0, 0
		for cut < boxBins && k+sums.hist[cut] <= kmax {
			k += sums.hist[cut]
			cut++
		}
		if cut < 2 {
			// Weights on their breakpoint: copy them all, whatever their
			// number, so that the ball is not empty.
			for ; cut < 2; cut++ {
				k += sums.hist[cut]
			}
		}
		rho := boxEdge(cut)
		bm := &boxModel{m: m, phi: phi, J: J, P: P, R: R, prop: prop, col: make([]float64, m), cnt: cnt, workers: workers}
		if cap(sc.idx) < k {
			sc.idx = make([]uint32, 0, k)
		}
		bm.idx = sc.idx[:0]
		for c, b := range bins {
			if int(b) < cut {
				bm.idx = append(bm.idx, uint32(c))
			}
		}
		// The model's quadratic: every weight's piece at the centre less
		// those of the weights it reads in place (none left when it reads
		// them all).
		if len(bm.idx) <= kmax && !boxBlocksAlways {
			if sc.cols.data == nil {
				sc.cols.data = make([]float32, 0, (m+3)*kmax)
			}
			sc.cols.fill(J, P, prop, R, bm.idx)
			bm.cols = &sc.cols
		} else {
			if sc.blocks == nil {
				sc.blocks = make([]boxCols, numChunks(n))
				for k := range sc.blocks {
					sc.blocks[k].data = make([]float32, 0, (m+3)*boxGather)
				}
			}
			bm.blocks = sc.blocks
		}
		bm.q = newBoxQuad(m)
		if cut < boxBins {
			bm.q = boxQuadClone(all)
			if nk := len(bm.idx); bm.cols != nil {
				boxSubtract(&bm.q, bm.cols, 0, nk, lambda)
			} else {
				blk := &bm.blocks[0]
				for b0 := 0; b0 < nk; b0 += boxGather {
					b1 := min(nk, b0+boxGather)
					blk.fill(J, P, prop, R, bm.idx[b0:b1])
					boxSubtract(&bm.q, blk, 0, b1-b0, lambda)
				}
			}
		}
		symmetrize(bm.q.A, m)
		maxEvals := boxMaxEvals
		if k > 0 {
			maxEvals = min(boxMaxEvals, max(boxMinEvals, max(n, boxSmall)/k))
			// All rounds' evaluations together read at most
			// boxNewtonWork(n) weights: a round that cannot make its
			// fewest evaluations within what is left ends the rounds.
			left := boxNewtonWork(n) - cnt.work
			if left/k < boxMinEvals {
				return best, nil
			}
			maxEvals = min(maxEvals, left/k)
		}
		lo, hi := make([]float64, m), make([]float64, m)
		inf := math.Inf(1)
		for i := range lo {
			lo[i], hi[i] = 0, inf
			if ball || math.IsInf(rho, 1) {
				lo[i] = math.Max(0, lambda[i]-rho*w[i])
				hi[i] = lambda[i] + rho*w[i]
			}
		}
		next, e, err := boxNewton(bm, lambda, lo, hi, tol, w, maxEvals)
		if err != nil && errors.Is(err, ErrUnbounded) && !ball && !math.IsInf(rho, 1) {
			// The model, not h, falls without bound: within the ball.
			for i := range lo {
				lo[i] = math.Max(0, lambda[i]-rho*w[i])
				hi[i] = lambda[i] + rho*w[i]
			}
			bm.evals = 0
			if k > 0 {
				left := boxNewtonWork(n) - cnt.work
				if left/k < boxMinEvals {
					return best, nil
				}
				maxEvals = min(maxEvals, left/k)
			}
			next, e, err = boxNewton(bm, lambda, lo, hi, tol, w, maxEvals)
		}
		if err != nil {
			return best, err
		}
		if math.IsInf(rho, 1) {
			// Every weight was copied: the model is h itself.
			res := boxResult{lambda: next, clipped: e.clipped, rates: make([]float64, m), done: true}
			for i := range res.rates {
				res.rates[i] = e.grad[i] + phi
			}
			if !boxStationary(next, e.grad, tol) {
				// The Newton steps stalled short of the tolerance on
				// rounding; a constraint far from it is out of reach.
				for i, g := range e.grad {
					if g < -tol[i]*1e3 {
						return res, fmt.Errorf("png: Constrain: rate φ = %g out of reach within the bound (task %d short by %g): %w", phi, i, -g, ErrUnbounded)
					}
				}
			}
			return res, nil
		}
		step = make([]float64, m)
		for i := range step {
			step[i] = math.Max(next[i]-lambda[i], 0)
		}
		prev, ball = lambda, false
		lambda = next
	}
	return best, nil
}

// boxQuadAt returns q's h and ∇h at lambda (q.A lower triangle), less φ·Σλ.
func boxQuadAt(q *boxQuad, lambda []float64, phi float64) (float64, []float64) {
	m := len(lambda)
	A := slices.Clone(q.A)
	symmetrize(A, m)
	g := make([]float64, m)
	h := q.c0
	for i := 0; i < m; i++ {
		var al float64
		for j := 0; j < m; j++ {
			al += A[i*m+j] * lambda[j]
		}
		g[i] = q.b[i] + al - phi
		h += lambda[i]*(q.b[i]+0.5*al) - phi*lambda[i]
	}
	return h, g
}

// symmetrize copies A's lower triangle (m×m) to its upper.
func symmetrize(A []float64, m int) {
	for i := 0; i < m; i++ {
		for j := 0; j < i; j++ {
			A[j*m+i] = A[i*m+j]
		}
	}
}

// boxNewton minimises bm over lo ≤ λ ≤ hi from lambda by projected,
// damped Newton steps (Levenberg–Marquardt): coordinates at a bound the
// gradient pushes against stay there, the others take the step
// (H_FF + μI)⁻¹ of the piece λ is on in λ scaled per task by w (the step
// W(WHW + μI)⁻¹W), clipped to the box. Without the scaling μ, sized to
// H's trace, swamps the curvature of a task whose gradient is tiny beside
// the others' (a loss that has saturated: K_ii 1e-80 of the others), and
// its λ barely moves in any number of steps. A step that does
// not decrease h enough is retried with μ ten times larger, and μ shrinks
// tenfold after each accepted one: on the right piece, with μ small, one
// step is exact, and where H is singular (every weight of a task clipped:
// h linear along some direction) μ sets the step's length. It stops at a
// stationary point or after maxEvals evaluations, returning the best point
// found.
func boxNewton(bm *boxModel, lambda, lo, hi, tol, w []float64, maxEvals int) ([]float64, boxEval, error) {
	m := bm.m
	lambda = append([]float64(nil), lambda...)
	e := bm.eval(lambda)
	mu := -1.0
	for tries := 0; bm.evals < maxEvals && tries < 4*maxEvals; tries++ {
		if boxBoxStationary(lambda, e.grad, lo, hi, tol) {
			break
		}
		free := make([]int, 0, m)
		var tr float64
		for i := 0; i < m; i++ {
			if (lambda[i] <= lo[i] && e.grad[i] > 0) || (lambda[i] >= hi[i] && e.grad[i] < 0) {
				continue
			}
			free = append(free, i)
			tr += w[i] * w[i] * e.H[i*m+i]
		}
		if len(free) == 0 {
			break
		}
		muMin := 1e-12 * tr
		if muMin == 0 {
			var gn, ln float64
			for _, i := range free {
				gn = math.Max(gn, math.Abs(w[i]*e.grad[i]))
				ln = math.Max(ln, math.Abs(lambda[i]/w[i]))
			}
			muMin = gn / (1 + ln) * 1e-6
		}
		mu = math.Max(mu, muMin)
		f := len(free)
		H := make([]float64, f*f)
		g := make([]float64, f)
		for a, i := range free {
			g[a] = -w[i] * e.grad[i]
			for b, j := range free {
				H[a*f+b] = w[i] * w[j] * e.H[i*m+j]
			}
			H[a*f+a] += mu
		}
		x := solveSPD(H, g, f)
		next := slices.Clone(lambda)
		var slope float64
		for a, i := range free {
			next[i] = math.Max(lo[i], math.Min(hi[i], lambda[i]+w[i]*x[a]))
			slope += e.grad[i] * (next[i] - lambda[i])
		}
		if !(slope < 0) {
			mu *= 10
			continue
		}
		if slices.Max(next) > 1e300 {
			return lambda, e, fmt.Errorf("png: Constrain: rate φ = %g out of reach within the bound: %w", bm.phi, ErrUnbounded)
		}
		ne := bm.eval(next)
		if math.IsInf(ne.h, -1) {
			return lambda, e, fmt.Errorf("png: Constrain: rate φ = %g out of reach within the bound: %w", bm.phi, ErrUnbounded)
		}
		if math.IsNaN(ne.h) || math.IsInf(ne.h, 0) {
			return lambda, e, fmt.Errorf("png: Constrain within the bound: dual value %v: %w", ne.h, ErrNonFinite)
		}
		if ne.h <= e.h+1e-4*slope {
			lambda, e = next, ne
			mu /= 10
		} else {
			mu *= 10
		}
	}
	return lambda, e, nil
}

// solveSPD solves Hx = g for a symmetric positive definite H (f×f) by
// Cholesky; a pivot lost to rounding is lifted to keep x finite.
func solveSPD(H, g []float64, f int) []float64 {
	L := make([]float64, f*f)
	for i := 0; i < f; i++ {
		for j := 0; j <= i; j++ {
			s := H[i*f+j]
			for k := 0; k < j; k++ {
				s -= L[i*f+k] * L[j*f+k]
			}
			if i == j {
				L[i*f+i] = math.Sqrt(math.Max(s, 1e-300+1e-15*H[i*f+i]))
			} else {
				L[i*f+j] = s / L[j*f+j]
			}
		}
	}
	y := make([]float64, f)
	for i := 0; i < f; i++ {
		s := g[i]
		for k := 0; k < i; k++ {
			s -= L[i*f+k] * y[k]
		}
		y[i] = s / L[i*f+i]
	}
	x := make([]float64, f)
	for i := f - 1; i >= 0; i-- {
		s := y[i]
		for k := i + 1; k < f; k++ {
			s -= L[k*f+i] * x[k]
		}
		x[i] = s / L[i*f+i]
	}
	return x
}

// boxStationary reports whether λ ≥ 0 with gradient grad satisfies the
// optimality conditions of min h over λ ≥ 0 to tol: ∇h_i ≈ 0 where
// λ_i > 0, ∇h_i ≥ 0 (the constraint holds) where λ_i = 0.
func boxStationary(lambda, grad, tol []float64) bool {
	for i, l := range lambda {
		if grad[i] < -tol[i] || (l > 0 && grad[i] > tol[i]) {
			return false
		}
	}
	return true
}

// boxBoxStationary is boxStationary over lo ≤ λ ≤ hi.
func boxBoxStationary(lambda, grad, lo, hi, tol []float64) bool {
	for i, l := range lambda {
		if (l > lo[i] && grad[i] > tol[i]) || (l < hi[i] && grad[i] < -tol[i]) {
			return false
		}
	}
	return true
}

// boxCombine writes dst = (1 − t)·clip(prop + P∘(Jᵀλ), −R, R) + t·a, each
// element accumulated in float64 and rounded once, where a is the min-norm
// update held within the box, clip(scale·P∘Jᵀω, −R, R), or 0 when omega
// is nil. t = 0 is the bounded problem's update. It reports whether
// every element written is finite.
func boxCombine(dst []float32, J Jacobian, lambda []float64, P, prop, R []float32, t float64, omega []float64, scale float64, workers int) bool {
	w := numWorkers(workers, J.N)
	bad := make([]bool, w)
	splitCols(J.N, w, 1, func(wi, lo, hi int) {
		done := lo
		if useVec && (J.M == 2 || J.M == 3) && P != nil && R != nil && hi-lo >= 8 {
			done = lo + (hi-lo)&^7
			bad[wi] = boxCombineVec(dst, J, lambda, P, prop, R, t, omega, scale, lo, done)
		}
		if boxCombineRange(dst, J, lambda, P, prop, R, t, omega, scale, done, hi) {
			bad[wi] = true
		}
	})
	return !slices.Contains(bad, true)
}

// boxCombineRange is boxCombine on columns [lo, hi); it reports whether
// an element written is not finite.
func boxCombineRange(dst []float32, J Jacobian, lambda []float64, P, prop, R []float32, t float64, omega []float64, scale float64, lo, hi int) bool {
	m, n := J.M, J.N
	mix := t != 0 && omega != nil
	var nonFinite float32
	for c := lo; c < hi; c++ {
		var s, so float64
		for i := 0; i < m; i++ {
			v := float64(J.Data[i*n+c])
			if lambda[i] != 0 {
				s += lambda[i] * v
			}
			if mix {
				so += omega[i] * v
			}
		}
		if P != nil {
			s *= float64(P[c])
			so *= float64(P[c])
		}
		u := float64(prop[c]) + s
		if R != nil {
			r := float64(R[c])
			u = clip(u, r)
			if t != 0 {
				var a float64
				if omega != nil {
					a = clip(scale*so, r)
				}
				u = (1-t)*u + t*a
			}
		}
		f := float32(u)
		dst[c] = f
		nonFinite += f - f // NaN where f is ±Inf or NaN, else 0
	}
	return nonFinite != 0
}

// boxCombineVec is boxCombineRange for m = 2 or 3 with a metric and a
// bound on columns [lo, hi), hi − lo a multiple of 8, by combine2AVX512
// or combine3AVX512: the Go loop's operations lane by lane, so the same
// bits.
func boxCombineVec(dst []float32, J Jacobian, lambda []float64, P, prop, R []float32, t float64, omega []float64, scale float64, lo, hi int) bool {
	n := J.N
	var flags uint64
	for i, bit := range []uint64{combineL0, combineL1, combineL2}[:J.M] {
		if lambda[i] != 0 {
			flags |= bit
		}
	}
	o := make([]float64, 3)
	if t != 0 {
		flags |= combineT
		if omega != nil {
			flags |= combineOmega
			copy(o, omega)
		}
	}
	if J.M == 2 {
		a := combine2Args{l0: lambda[0], l1: lambda[1], o0: o[0], o1: o[1], t: t, omt: 1 - t, scale: scale, flags: flags}
		return combine2AVX512(&a, &dst[lo], &J.Data[lo], &J.Data[n+lo], &P[lo], &prop[lo], &R[lo], hi-lo) != 0
	}
	a := combine3Args{l0: lambda[0], l1: lambda[1], l2: lambda[2], o0: o[0], o1: o[1], o2: o[2], t: t, omt: 1 - t, scale: scale, flags: flags}
	return combine3AVX512(&a, &dst[lo], &J.Data[lo], &J.Data[n+lo], &J.Data[2*n+lo], &P[lo], &prop[lo], &R[lo], hi-lo) != 0
}

// clip is x held within ±r (r > 0, x not NaN): math.Max and math.Min,
// which are calls on amd64, written as comparisons.
func clip(x, r float64) float64 {
	if x > r {
		return r
	}
	if x < -r {
		return -r
	}
	return x
}
