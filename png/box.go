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
// bins the weights by ρ_c (one bin an octave, one byte a weight) and sums,
// per bin, the quadratic each weight contributes in its present state. A
// radius ρ is then chosen so that at most boxCompact(n) weights lie within
// it: these are copied out, the rest add up to one m×m quadratic. The
// model (that quadratic plus the copied weights' exact pieces) is h on
// the ball ‖(λ − λ₀)/w‖∞ ≤ ρ, and near it a Newton model that knows the
// pieces nearest the centre. Damped projected Newton steps on the model
// (each a few m×m solves and a pass over the copied weights only, at most
// n/k of them) minimise it over λ ≥ 0, giving the next centre; where that
// raised h, the round is made again from the last centre with the steps
// held to the ball, where the model is exact and h falls. On the adversarial
// cases of the tests (metric and bound over eight decades each, every
// coordinate saturated, tasks that nearly cancel) it ends in 3 to 8
// rounds.
//
// When the rounds run out, Constrain falls back on an update that still
// meets the rate (MetricInfo.Inexact; see boxCombine).
const (
	// constrainMaxPasses bounds Constrain's passes over the weights with
	// a bound: the metric's Gram matrix, the test of the unbounded update
	// against the box, the min-norm update's rates within it, boxDual's
	// rounds and the update itself. Without a bound it makes two.
	constrainMaxPasses = 4 + boxMaxRounds
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

// boxCounter counts one Constrain call's passes over the weights (each a
// read of J and of the per-weight vectors) and boxDual's rounds.
type boxCounter struct {
	passes int
	rounds int
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

func (q *boxQuad) add(o *boxQuad) {
	for i := range q.A {
		q.A[i] += o.A[i]
	}
	for i := range q.b {
		q.b[i] += o.b[i]
	}
	q.c0 += o.c0
	q.n += o.n
	q.clipped += o.clipped
}

// boxPiece adds weight c's contribution in the state it is in at s:
// free (prop + p·s inside ±r): bᵀλ gets prop·J_c and A gets p·J_cJ_cᵀ;
// clipped at ±r: bᵀλ gets ±r·J_c and c0 −(±r − prop)²/(2p).
func (q *boxQuad) addWeight(col []float64, s, x, p, r float64) {
	m := len(col)
	u := x + p*s
	q.n++
	switch {
	case u > r:
		q.clipped++
		for i := 0; i < m; i++ {
			q.b[i] += r * col[i]
		}
		d := r - x
		q.c0 -= d * d / (2 * p)
	case u < -r:
		q.clipped++
		for i := 0; i < m; i++ {
			q.b[i] -= r * col[i]
		}
		d := r + x
		q.c0 -= d * d / (2 * p)
	default:
		for i := 0; i < m; i++ {
			q.b[i] += x * col[i]
			a := p * col[i]
			for j := 0; j <= i; j++ {
				q.A[i*m+j] += a * col[j]
			}
		}
	}
}

// boxRound is one round's pass at centre lambda: the per-bin quadratics
// and, in bins (one byte a weight), each weight's ρ_c bin. It also adds
// Σ_c |J_ic|·R_c into top when top is not nil, and returns
// Σ_c R_c·|J_cᵀd| (the rate h loses along λ + t·d as t → ∞) when d is not
// nil.
func boxRound(J Jacobian, lambda, w []float64, P, prop, R []float32, bins []uint8, workers int, top, d []float64) ([]boxQuad, float64) {
	m, n := J.M, J.N
	nw := numWorkers(workers, n)
	parts := make([][]boxQuad, nw)
	extra := make([]float64, nw*(m+1))
	splitCols(n, nw, 1, func(wi, lo, hi int) {
		qs := make([]boxQuad, boxBins)
		for b := range qs {
			qs[b] = newBoxQuad(m)
		}
		parts[wi] = qs
		ex := extra[wi*(m+1) : (wi+1)*(m+1)]
		col := make([]float64, m)
		for c := lo; c < hi; c++ {
			var s, ds, wsum float64
			for i := 0; i < m; i++ {
				col[i] = float64(J.Data[i*n+c])
				s += lambda[i] * col[i]
				wsum += math.Abs(col[i]) * w[i]
				if d != nil {
					ds += d[i] * col[i]
				}
			}
			p, r := 1.0, math.Inf(1)
			if P != nil {
				p = float64(P[c])
			}
			if R != nil {
				r = float64(R[c])
			}
			x := float64(prop[c])
			// The breakpoints of f_c in s: (±r − x)/p.
			sLo, sHi := (-r-x)/p, (r-x)/p
			var dist float64
			switch {
			case s > sHi:
				dist = s - sHi
			case s < sLo:
				dist = sLo - s
			default:
				dist = math.Min(sHi-s, s-sLo)
			}
			rho := math.Inf(1)
			if wsum > 0 {
				rho = dist / wsum
			}
			b := boxBin(rho)
			bins[c] = b
			parts[wi][b].addWeight(col, s, x, p, r)
			for i := 0; i < m && top != nil; i++ {
				if col[i] != 0 {
					ex[i] += math.Abs(col[i]) * r
				}
			}
			if d != nil && ds != 0 {
				ex[m] += r * math.Abs(ds)
			}
		}
	})
	qs := make([]boxQuad, boxBins)
	for b := range qs {
		qs[b] = newBoxQuad(m)
		for wi := 0; wi < nw; wi++ {
			if parts[wi] != nil {
				qs[b].add(&parts[wi][b])
			}
		}
	}
	var asym float64
	for wi := 0; wi < nw; wi++ {
		for i := 0; i < m && top != nil; i++ {
			top[i] += extra[wi*(m+1)+i]
		}
		asym += extra[wi*(m+1)+m]
	}
	return qs, asym
}

// boxModel is h on one round's ball: the quadratic of the weights whose
// state is fixed there plus the exact pieces of the copied ones.
type boxModel struct {
	m   int
	phi float64
	q   boxQuad // A filled in full (symmetric)
	// idx are the positions of the weights within the ball, read in
	// place from J, P, prop and R (nil: all ones, all +Inf) at each
	// evaluation: copying them out took (m+3)·8 bytes a weight, and when
	// every weight sits on a breakpoint (an update at Adam's bound) that
	// was every weight.
	idx   []uint32
	J     Jacobian
	P, R  []float32
	prop  []float32
	col   []float64 // one weight's column of J
	evals int
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
	n, col := bm.J.N, bm.col
	for _, c := range bm.idx {
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
		e.h += s*u - dd*dd/(2*p)
		for i, v := range col {
			e.grad[i] += v * u
		}
		if free {
			for i, v := range col {
				a := p * v
				for j := 0; j < m; j++ {
					e.H[i*m+j] += a * col[j]
				}
			}
		} else {
			e.clipped++
		}
	}
	for i := 0; i < m; i++ {
		e.grad[i] -= bm.phi
		e.h -= bm.phi * lambda[i]
	}
	return e
}

// boxScratch is the memory of one Constrain call's boxDual calls, a
// number of bytes a weight (ConstrainScratchBytes): each weight's ρ bin,
// and the positions of the weights a round's model reads in place.
type boxScratch struct {
	bins []uint8
	idx  []uint32
}

// newBoxScratch allocates the bins; the positions grow to the most
// weights a round copies (boxCompact(n), or all those on a breakpoint).
func newBoxScratch(n int) *boxScratch { return &boxScratch{bins: make([]uint8, n)} }

// ConstrainScratchBytes is the most memory a Constrain call with a bound
// allocates beside its arguments for m tasks and n weights: five bytes a
// weight (boxScratch: a ρ bin and a 32-bit position each) and, for the
// m×m quadratics of each worker's ρ bins and the rest of the dual, at
// boxBins·(m²+m+4)·8 bytes a worker (20 KiB at m = 2). A training loop's
// memory plan adds it to the vectors it holds.
func ConstrainScratchBytes(m, n int) int64 {
	return 5*int64(n) + int64(boxBins)*int64(m*m+m+4)*8*int64(min(64, max(1, numWorkers(0, n))))
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
func boxDual(J Jacobian, lambda []float64, w []float64, P, prop, R []float32, phi float64, workers int, cnt *boxCounter, sc *boxScratch) (boxResult, error) {
	m, n := J.M, J.N
	lambda = append([]float64(nil), lambda...)
	var top, tol, step []float64
	bins := sc.bins
	kmax := boxCompact(n)
	var best boxResult
	bestH := math.Inf(1)
	var prev []float64 // the last accepted centre
	ball := false      // this round steps within the ball
	for cnt.rounds < boxMaxRounds {
		cnt.rounds++
		cnt.pass()
		first := top == nil
		var topArg []float64
		if first {
			top = make([]float64, m)
			topArg = top
		}
		qs, asym := boxRound(J, lambda, w, P, prop, R, bins, workers, topArg, step)
		if first {
			tol = make([]float64, m)
			for i := range tol {
				tol[i] = boxTol * (top[i] + math.Abs(phi))
			}
		}
		// h, ∇h at the centre, exactly: every weight's piece there.
		all := newBoxQuad(m)
		for b := range qs {
			all.add(&qs[b])
		}
		hc, gc := boxQuadAt(&all, lambda, phi)
		if math.IsNaN(hc) || math.IsInf(hc, 0) {
			return best, fmt.Errorf("png: Constrain within the bound: dual value %v: %w", hc, ErrNonFinite)
		}
		if hc > bestH && prev != nil {
			// The free step raised h: step from the last centre within
			// the ball instead.
			lambda, prev, ball, step = prev, nil, true, nil
			continue
		}
		bestH = hc
		best = boxResult{lambda: slices.Clone(lambda), clipped: all.clipped, rates: make([]float64, m)}
		for i := range best.rates {
			best.rates[i] = gc[i] + phi
		}
		if boxStationary(lambda, gc, tol) {
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
		for cut < boxBins && k+qs[cut].n <= kmax {
			k += qs[cut].n
			cut++
		}
		if cut < 2 {
			// Weights on their breakpoint: copy them all, whatever their
			// number, so that the ball is not empty.
			for ; cut < 2; cut++ {
				k += qs[cut].n
			}
		}
		rho := boxEdge(cut)
		bm := &boxModel{m: m, phi: phi, q: newBoxQuad(m), J: J, P: P, R: R, prop: prop, col: make([]float64, m)}
		for b := cut; b < boxBins; b++ {
			bm.q.add(&qs[b])
		}
		symmetrize(bm.q.A, m)
		if cap(sc.idx) < k {
			sc.idx = make([]uint32, 0, k)
		}
		bm.idx = sc.idx[:0]
		for c, b := range bins {
			if int(b) < cut {
				bm.idx = append(bm.idx, uint32(c))
			}
		}
		maxEvals := boxMaxEvals
		if k > 0 {
			maxEvals = min(boxMaxEvals, max(boxMinEvals, max(n, boxSmall)/k))
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
		next, e, err := boxNewton(bm, lambda, lo, hi, tol, maxEvals)
		if err != nil && errors.Is(err, ErrUnbounded) && !ball && !math.IsInf(rho, 1) {
			// The model, not h, falls without bound: within the ball.
			for i := range lo {
				lo[i] = math.Max(0, lambda[i]-rho*w[i])
				hi[i] = lambda[i] + rho*w[i]
			}
			bm.evals = 0
			next, e, err = boxNewton(bm, lambda, lo, hi, tol, maxEvals)
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
// (H_FF + μI)⁻¹ of the piece λ is on, clipped to the box. A step that does
// not decrease h enough is retried with μ ten times larger, and μ shrinks
// tenfold after each accepted one: on the right piece, with μ small, one
// step is exact, and where H is singular (every weight of a task clipped:
// h linear along some direction) μ sets the step's length. It stops at a
// stationary point or after maxEvals evaluations, returning the best point
// found.
func boxNewton(bm *boxModel, lambda, lo, hi, tol []float64, maxEvals int) ([]float64, boxEval, error) {
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
			tr += e.H[i*m+i]
		}
		if len(free) == 0 {
			break
		}
		muMin := 1e-12 * tr
		if muMin == 0 {
			var gn, ln float64
			for _, i := range free {
				gn = math.Max(gn, math.Abs(e.grad[i]))
				ln = math.Max(ln, math.Abs(lambda[i]))
			}
			muMin = gn / (1 + ln) * 1e-6
		}
		mu = math.Max(mu, muMin)
		f := len(free)
		H := make([]float64, f*f)
		g := make([]float64, f)
		for a, i := range free {
			g[a] = -e.grad[i]
			for b, j := range free {
				H[a*f+b] = e.H[i*m+j]
			}
			H[a*f+a] += mu
		}
		x := solveSPD(H, g, f)
		next := slices.Clone(lambda)
		var slope float64
		for a, i := range free {
			next[i] = math.Max(lo[i], math.Min(hi[i], lambda[i]+x[a]))
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
// is nil. t = 0 is the bounded problem's update.
func boxCombine(dst []float32, J Jacobian, lambda []float64, P, prop, R []float32, t float64, omega []float64, scale float64, workers int) {
	m, n := J.M, J.N
	w := numWorkers(workers, n)
	splitCols(n, w, 1, func(_, lo, hi int) {
		for c := lo; c < hi; c++ {
			var s, so float64
			for i := 0; i < m; i++ {
				v := float64(J.Data[i*n+c])
				if lambda[i] != 0 {
					s += lambda[i] * v
				}
				if t != 0 && omega != nil {
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
				u = math.Max(-r, math.Min(r, u))
				if t != 0 {
					a := math.Max(-r, math.Min(r, scale*so))
					if omega == nil {
						a = 0
					}
					u = (1-t)*u + t*a
				}
			}
			dst[c] = float32(u)
		}
	})
}

// clippedRate returns the rates Jũ for ũ = clip(scale·P∘Jᵀω, −R, R), the
// min-norm update of the metric held within the box, and whether the box
// clipped it.
func clippedRate(J Jacobian, omega []float64, P, R []float32, scale float64, workers int) ([]float64, bool) {
	m, n := J.M, J.N
	w := numWorkers(workers, n)
	parts := make([]float64, w*(m+1))
	splitCols(n, w, 1, func(wi, lo, hi int) {
		q := parts[wi*(m+1) : (wi+1)*(m+1)]
		for c := lo; c < hi; c++ {
			var s float64
			for i := 0; i < m; i++ {
				s += omega[i] * float64(J.Data[i*n+c])
			}
			if P != nil {
				s *= float64(P[c])
			}
			u := scale * s
			if r := float64(R[c]); math.Abs(u) > r {
				u, q[m] = math.Copysign(r, u), 1
			}
			for i := 0; i < m; i++ {
				q[i] += float64(J.Data[i*n+c]) * u
			}
		}
	})
	q := make([]float64, m)
	clipped := false
	for wi := 0; wi < w; wi++ {
		for i := range q {
			q[i] += parts[wi*(m+1)+i]
		}
		clipped = clipped || parts[wi*(m+1)+m] != 0
	}
	return q, clipped
}
