package png

import "math"

// combineBlock is the number of columns one worker accumulates at a time in
// float64 before rounding to float32 (16 KiB of accumulator, L1-resident).
const combineBlock = 2048

// combine writes v = Jᵀa + extra into dst (n values) in one pass over J,
// split over columns across workers, and returns ‖v‖ of the float32 result
// (computed in float64). Rows with a_i = 0 are not read. extra may be nil.
// Each v_j is accumulated in float64 and rounded once, so cancellation
// between ∇F and Jᵀλ costs no more than one float32 rounding.
func combine(dst []float32, J Jacobian, a []float64, extra []float32, workers int) float64 {
	m, n := J.M, J.N
	rows := make([]int, 0, m)
	for i, ai := range a {
		if ai != 0 {
			rows = append(rows, i)
		}
	}
	w := numWorkers(workers, n)
	sums := make([]float64, w)
	splitCols(n, w, combineBlock, func(wi, lo, hi int) {
		var acc [combineBlock]float64
		var ss float64
		for b0 := lo; b0 < hi; b0 += combineBlock {
			b1 := b0 + combineBlock
			if b1 > hi {
				b1 = hi
			}
			if len(rows) >= 1 && len(rows) <= 2 && combineFused {
				var e []float32
				if extra != nil {
					e = extra[b0:b1]
				}
				if i0 := rows[0]; len(rows) == 1 {
					ss = combineOne(dst[b0:b1], e, a[i0], J.Data[i0*n+b0:i0*n+b1], ss)
				} else {
					i1 := rows[1]
					ss = combineTwo(dst[b0:b1], e, a[i0], J.Data[i0*n+b0:i0*n+b1], a[i1], J.Data[i1*n+b0:i1*n+b1], ss)
				}
				continue
			}
			if len(rows) >= 3 && len(rows) <= 4 && combineFused {
				var xs [4][]float32
				var as [4]float64
				for r, i := range rows {
					xs[r], as[r] = J.Data[i*n+b0:i*n+b1], a[i]
				}
				var e []float32
				if extra != nil {
					e = extra[b0:b1]
				}
				ss = combineFew(dst[b0:b1], e, as, xs, len(rows), ss)
				continue
			}
			l := b1 - b0
			c := acc[:l]
			if extra != nil {
				for k, x := range extra[b0:b1] {
					c[k] = float64(x)
				}
			} else {
				for k := range c {
					c[k] = 0
				}
			}
			r := 0
			for ; r+3 < len(rows); r += 4 {
				i0, i1, i2, i3 := rows[r], rows[r+1], rows[r+2], rows[r+3]
				axpy4(c, a[i0], J.Data[i0*n+b0:i0*n+b1], a[i1], J.Data[i1*n+b0:i1*n+b1],
					a[i2], J.Data[i2*n+b0:i2*n+b1], a[i3], J.Data[i3*n+b0:i3*n+b1])
			}
			for ; r+1 < len(rows); r += 2 {
				i0, i1 := rows[r], rows[r+1]
				axpy2(c, a[i0], J.Data[i0*n+b0:i0*n+b1], a[i1], J.Data[i1*n+b0:i1*n+b1])
			}
			if r < len(rows) {
				i0 := rows[r]
				axpy1(c, a[i0], J.Data[i0*n+b0:i0*n+b1])
			}
			d := dst[b0:b1]
			for k, x := range c {
				f := float32(x)
				d[k] = f
				ss += float64(f) * float64(f)
			}
		}
		sums[wi] = ss
	})
	var ss float64
	for _, s := range sums {
		ss += s
	}
	return math.Sqrt(ss)
}

// axpy4 does c += a0·x0 + a1·x1 + a2·x2 + a3·x3 (float32 x, float64 c).
func axpy4(c []float64, a0 float64, x0 []float32, a1 float64, x1 []float32, a2 float64, x2 []float32, a3 float64, x3 []float32) {
	x0 = x0[:len(c)]
	x1 = x1[:len(c)]
	x2 = x2[:len(c)]
	x3 = x3[:len(c)]
	for k := range c {
		c[k] += (a0*float64(x0[k]) + a1*float64(x1[k])) + (a2*float64(x2[k]) + a3*float64(x3[k]))
	}
}

// axpy2 does c += a0·x0 + a1·x1 (float32 x, float64 c), unrolled by 4.
func axpy2(c []float64, a0 float64, x0 []float32, a1 float64, x1 []float32) {
	x0 = x0[:len(c)]
	x1 = x1[:len(c)]
	k := 0
	for ; k+4 <= len(c); k += 4 {
		cc := c[k : k+4 : k+4]
		y0 := x0[k : k+4 : k+4]
		y1 := x1[k : k+4 : k+4]
		cc[0] += a0*float64(y0[0]) + a1*float64(y1[0])
		cc[1] += a0*float64(y0[1]) + a1*float64(y1[1])
		cc[2] += a0*float64(y0[2]) + a1*float64(y1[2])
		cc[3] += a0*float64(y0[3]) + a1*float64(y1[3])
	}
	for ; k < len(c); k++ {
		c[k] += a0*float64(x0[k]) + a1*float64(x1[k])
	}
}

// axpy1 does c += a0·x0 (float32 x0, float64 c), unrolled by 4.
func axpy1(c []float64, a0 float64, x0 []float32) {
	x0 = x0[:len(c)]
	k := 0
	for ; k+4 <= len(c); k += 4 {
		cc := c[k : k+4 : k+4]
		y0 := x0[k : k+4 : k+4]
		cc[0] += a0 * float64(y0[0])
		cc[1] += a0 * float64(y0[1])
		cc[2] += a0 * float64(y0[2])
		cc[3] += a0 * float64(y0[3])
	}
	for ; k < len(c); k++ {
		c[k] += a0 * float64(x0[k])
	}
}

// combineFused enables combineFew; tests turn it off to compare.
var combineFused = true

// combineFew is one block of combine for three or four rows (m = 3 is
// MTAN's), in one pass per value instead of one per row through a float64
// block: d = e + Σ a_r·x_r (e nil: 0) with the additions grouped as
// axpy4, axpy2 and axpy1 group them (the same bits), and ss plus the
// squares of d in order. It handles one to four rows; combine sends it
// three and four: on J of 3 × 44 M the v pass took 121 ms through the
// block and 60–62 ms here. One and two rows go to combineOne and
// combineTwo, which have no switch per value: BenchmarkCombine at m = 2,
// n = 1e6 took 1.2–1.4 ms there against 2.5–3.7 ms through the block,
// whose clear was a third of a percent of the two-task models' steps.
func combineFew(d, e []float32, a [4]float64, x [4][]float32, rows int, ss float64) float64 {
	a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
	x0, x1, x2, x3 := x[0], x[1], x[2], x[3]
	for k := range d {
		var v float64
		if e != nil {
			v = float64(e[k])
		}
		switch rows {
		case 1:
			v += a0 * float64(x0[k])
		case 2:
			v += a0*float64(x0[k]) + a1*float64(x1[k])
		case 3:
			v += a0*float64(x0[k]) + a1*float64(x1[k])
			v += a2 * float64(x2[k])
		case 4:
			v += (a0*float64(x0[k]) + a1*float64(x1[k])) + (a2*float64(x2[k]) + a3*float64(x3[k]))
		}
		f := float32(v)
		d[k] = f
		ss += float64(f) * float64(f)
	}
	return ss
}

// combineTwo is one block of combine for two rows (the two-task models'):
// d = e + (a0·x0 + a1·x1) (e nil: 0 + …, as the block path starts from a
// cleared float64 block, which keeps its sign of zero) and ss plus the
// squares of d in order, in one pass without the block and its clear. On
// AVX-512 a kernel (two2AVX512) writes the same d eight values at a time
// and sums the squares in eight lanes, added in order after.
func combineTwo(d, e []float32, a0 float64, x0 []float32, a1 float64, x1 []float32, ss float64) float64 {
	x0, x1 = x0[:len(d)], x1[:len(d)]
	if useVec && len(d) >= 8 {
		k := len(d) &^ 7
		var ep *float32
		if e != nil {
			e = e[:len(d)]
			ep = &e[0]
		}
		var lanes [8]float64
		two2AVX512(&d[0], ep, &x0[0], &x1[0], a0, a1, k, &lanes)
		for _, v := range lanes {
			ss += v
		}
		if e != nil {
			e = e[k:]
		}
		d, x0, x1 = d[k:], x0[k:], x1[k:]
	}
	if e == nil {
		var z float64
		for k := range d {
			f := float32(z + (a0*float64(x0[k]) + a1*float64(x1[k])))
			d[k] = f
			ss += float64(f) * float64(f)
		}
		return ss
	}
	e = e[:len(d)]
	for k := range d {
		f := float32(float64(e[k]) + (a0*float64(x0[k]) + a1*float64(x1[k])))
		d[k] = f
		ss += float64(f) * float64(f)
	}
	return ss
}

// combineOne is combineTwo for one row: d = e + a0·x0.
func combineOne(d, e []float32, a0 float64, x0 []float32, ss float64) float64 {
	x0 = x0[:len(d)]
	if e == nil {
		var z float64
		for k := range d {
			f := float32(z + a0*float64(x0[k]))
			d[k] = f
			ss += float64(f) * float64(f)
		}
		return ss
	}
	e = e[:len(d)]
	for k := range d {
		f := float32(float64(e[k]) + a0*float64(x0[k]))
		d[k] = f
		ss += float64(f) * float64(f)
	}
	return ss
}
