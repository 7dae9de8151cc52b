package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/backend/internal/vmath"
)

// Float32 kernels of Add, Sub, Mul and Div without broadcasting, split
// over the cores: each element is the float32 operation itself, which
// gives the bits of the float64 formula rounded once (a float64 sum,
// difference, product or quotient of two float32 values rounded to
// float32 is correctly rounded: 53 ≥ 2·24 + 2), without the call through
// arith.f per element.

// arith32 writes a op c into dst for op Add, Sub, Mul or Div and reports
// whether it did.
func arith32(op string, dst, a, c []float32) bool {
	a, c = a[:len(dst)], c[:len(dst)]
	var f func(d, a, c []float32)
	switch op {
	case "Add":
		f = func(d, a, c []float32) {
			for i := range d {
				d[i] = a[i] + c[i]
			}
		}
	case "Sub":
		f = func(d, a, c []float32) {
			for i := range d {
				d[i] = a[i] - c[i]
			}
		}
	case "Mul":
		f = func(d, a, c []float32) {
			for i := range d {
				d[i] = a[i] * c[i]
			}
		}
	case "Div":
		f = func(d, a, c []float32) {
			for i := range d {
				d[i] = a[i] / c[i]
			}
		}
	default:
		return false
	}
	parallel.Elems(len(dst), func(lo, hi int) { f(dst[lo:hi], a[lo:hi], c[lo:hi]) })
	return true
}

// arithGrad32 writes into dst (any contents: every element is written)
// the gradient of input k of Add, Sub or Mul without broadcasting, as the
// general loop's dst[i] += g·∂ into a zeroed dst does (0 + v: a −0 term
// gives +0), and reports whether it did.
func arithGrad32(op string, k int, dst, a, c, g []float32) bool {
	g = g[:len(dst)]
	var f func(d, g, o []float32)
	var other []float32 // Mul's other operand
	switch {
	case op == "Add" || op == "Sub" && k == 0:
		f = func(d, g, _ []float32) {
			for i := range d {
				d[i] = 0 + g[i]
			}
		}
	case op == "Sub":
		f = func(d, g, _ []float32) {
			for i := range d {
				d[i] = 0 + -g[i]
			}
		}
	case op == "Mul":
		other = c[:len(dst)]
		if k == 1 {
			other = a[:len(dst)]
		}
		f = func(d, g, o []float32) {
			for i := range d {
				d[i] = 0 + g[i]*o[i]
			}
		}
	default:
		return false
	}
	parallel.ForElems(len(dst), gradArgs{dst, g, other, f}, func(a gradArgs, lo, hi int) {
		var o []float32
		if a.o != nil {
			o = a.o[lo:hi]
		}
		a.f(a.d[lo:hi], a.g[lo:hi], o)
	})
	return true
}

// gradArgs is arithGrad32's operands for parallel.ForElems: the gradient's
// destination, the output's gradient, Mul's other operand (or nil) and
// the kernel.
type gradArgs struct {
	d, g, o []float32
	f       func(d, g, o []float32)
}

// arithBcast32 is arith32 with broadcasting: a and c are read through
// their broadcasts ia and ib (nil: the identity). Each element is the
// float32 operation on the two float32 operands, the float64 formula
// rounded once, as in arith32. It reports false for the broadcasts it
// leaves to the general loop.
func arithBcast32(op string, dst, a, c []float32, ia, ib *shape.Bcast) bool {
	// One side is never nil here (arith32 takes the unbroadcast case); a
	// scalar side gets its own loops, an identity side reads in place.
	switch {
	case ia == nil && len(c) == 1:
		return arithScalar32(op, dst, a, c[0], false)
	case ib == nil && len(a) == 1:
		return arithScalar32(op, dst, c, a[0], true)
	case ia == nil || ib == nil:
		return arithHalf32(op, dst, a, c, ia, ib)
	case ia.Idx == nil || ib.Idx == nil:
		return false
	}
	var f func(d []float32, ia, ib []int)
	switch op {
	case "Add":
		f = func(d []float32, ia, ib []int) {
			for i := range d {
				d[i] = a[ia[i]] + c[ib[i]]
			}
		}
	case "Sub":
		f = func(d []float32, ia, ib []int) {
			for i := range d {
				d[i] = a[ia[i]] - c[ib[i]]
			}
		}
	case "Mul":
		f = func(d []float32, ia, ib []int) {
			for i := range d {
				d[i] = a[ia[i]] * c[ib[i]]
			}
		}
	case "Div":
		f = func(d []float32, ia, ib []int) {
			for i := range d {
				d[i] = a[ia[i]] / c[ib[i]]
			}
		}
	default:
		return false
	}
	parallel.Elems(len(dst), func(lo, hi int) { f(dst[lo:hi], ia.Idx[lo:hi], ib.Idx[lo:hi]) })
	return true
}

// arithHalf32 is arithBcast32 with one operand of the output's shape (its
// broadcast nil) and the other broadcast: a scale or bias per channel
// (ConvNeXt's layer scale, squeeze-and-excitation's gate), read through
// its walk (element, position in its run) or its index array.
func arithHalf32(op string, dst, a, c []float32, ia, ib *shape.Bcast) bool {
	full, part, b := a, c, ib
	if ia != nil {
		full, part, b = c, a, ia
	}
	swapped := ia != nil // part op full
	switch {
	case op == "Sub" && swapped, op == "Div" && swapped:
		return false
	case op != "Add" && op != "Mul" && op != "Sub" && op != "Div":
		return false
	}
	if b.Idx != nil {
		idx := b.Idx
		var f func(lo, hi int)
		switch op {
		case "Add":
			f = func(lo, hi int) {
				for i := lo; i < hi; i++ {
					dst[i] = full[i] + part[idx[i]]
				}
			}
		case "Mul":
			f = func(lo, hi int) {
				for i := lo; i < hi; i++ {
					dst[i] = full[i] * part[idx[i]]
				}
			}
		case "Sub":
			f = func(lo, hi int) {
				for i := lo; i < hi; i++ {
					dst[i] = full[i] - part[idx[i]]
				}
			}
		case "Div":
			f = func(lo, hi int) {
				for i := lo; i < hi; i++ {
					dst[i] = full[i] / part[idx[i]]
				}
			}
		}
		parallel.Elems(len(dst), f)
		return true
	}
	if b.Inner == 1 {
		// A bias or scale over the last axis: part's run of Mid values
		// against each row of full, no walk per element.
		mid := b.Mid
		parallel.Elems(len(dst), func(lo, hi int) {
			for i := lo; i < hi; {
				k := i % mid
				n := min(hi-i, mid-k)
				d, x, p := dst[i:i+n], full[i:i+n], part[k:k+n]
				switch op {
				case "Add":
					for j, v := range x {
						d[j] = v + p[j]
					}
				case "Mul":
					for j, v := range x {
						d[j] = v * p[j]
					}
				case "Sub":
					for j, v := range x {
						d[j] = v - p[j]
					}
				case "Div":
					for j, v := range x {
						d[j] = v / p[j]
					}
				}
				i += n
			}
		})
		return true
	}
	if b.Inner >= minVecRun && (op == "Add" || op == "Mul") {
		// Long runs against one value of part (a per-channel scale or
		// bias over planes): x·s + (−0) is x·s for every x·s, 1·x + s is
		// x + s, NaN payloads aside (vmath.AffineRelu32).
		parallel.Elems(len(dst), func(lo, hi int) {
			bcastRuns(b, lo, hi, func(i, n, k int) {
				if op == "Add" {
					vmath.AffineRelu32(dst[i:i+n], full[i:i+n], 1, part[k], false)
				} else {
					vmath.AffineRelu32(dst[i:i+n], full[i:i+n], part[k], negZero32, false)
				}
			})
		})
		return true
	}
	var f func(lo, hi int)
	switch op {
	case "Add":
		f = func(lo, hi int) {
			k, r := b.Walk(lo)
			for i := lo; i < hi; i++ {
				dst[i] = full[i] + part[k]
				k, r = b.Next(k, r)
			}
		}
	case "Mul":
		f = func(lo, hi int) {
			k, r := b.Walk(lo)
			for i := lo; i < hi; i++ {
				dst[i] = full[i] * part[k]
				k, r = b.Next(k, r)
			}
		}
	case "Sub":
		f = func(lo, hi int) {
			k, r := b.Walk(lo)
			for i := lo; i < hi; i++ {
				dst[i] = full[i] - part[k]
				k, r = b.Next(k, r)
			}
		}
	case "Div":
		f = func(lo, hi int) {
			k, r := b.Walk(lo)
			for i := lo; i < hi; i++ {
				dst[i] = full[i] / part[k]
				k, r = b.Next(k, r)
			}
		}
	}
	parallel.Elems(len(dst), f)
	return true
}

// arithScalar32 writes x op s (s op x when swapped) into dst.
func arithScalar32(op string, dst, x []float32, s float32, swapped bool) bool {
	x = x[:len(dst)]
	var f func(d, x []float32)
	switch {
	case op == "Add":
		f = func(d, x []float32) {
			for i := range d {
				d[i] = x[i] + s
			}
		}
	case op == "Mul":
		f = func(d, x []float32) {
			for i := range d {
				d[i] = x[i] * s
			}
		}
	case op == "Sub" && !swapped:
		f = func(d, x []float32) {
			for i := range d {
				d[i] = x[i] - s
			}
		}
	case op == "Sub":
		f = func(d, x []float32) {
			for i := range d {
				d[i] = s - x[i]
			}
		}
	case op == "Div" && !swapped:
		f = func(d, x []float32) {
			for i := range d {
				d[i] = x[i] / s
			}
		}
	case op == "Div":
		f = func(d, x []float32) {
			for i := range d {
				d[i] = s / x[i]
			}
		}
	default:
		return false
	}
	parallel.Elems(len(dst), func(lo, hi int) { f(dst[lo:hi], x[lo:hi]) })
	return true
}

// minVecRun is the shortest run of elements against one broadcast value
// that the element-wise kernels give to a vector kernel (bcastRuns).
const minVecRun = 16

// negZero32 is −0, the float32 that adds to any value without changing it.
var negZero32 = float32(math.Copysign(0, -1))

// bcastRuns calls f(i, n, k) for each run [i, i+n) of the result elements
// [lo, hi) that read element k of b's operand (b.Idx nil), in order.
func bcastRuns(b *shape.Bcast, lo, hi int, f func(i, n, k int)) {
	k, r := b.Walk(lo)
	for i := lo; i < hi; {
		n := min(b.Inner-r, hi-i)
		f(i, n, k)
		i += n
		r = 0
		if k++; k == b.Mid {
			k = 0
		}
	}
}

// arithGradSpread32 writes into dst the gradient of input k of Add, Sub
// or Mul, or of Div's dividend, when k is not broadcast but its other
// operand is (read through its broadcast oi): one term per element, as
// arithGrad32 (Div's g·(1/c) in float64, rounded once, as its float64
// formula).
func arithGradSpread32(op string, k int, dst, a, c, g []float32, oi *shape.Bcast) bool {
	g = g[:len(dst)]
	switch {
	case op == "Div" && k == 0 && len(c) == 1: // GELU's x/√2, attention's scale
		r := 1 / float64(c[0])
		parallel.Elems(len(dst), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				dst[i] = 0 + float32(float64(g[i])*r)
			}
		})
	case op == "Div" && k == 0 && oi != nil && oi.Idx == nil: // a broadcast divisor; not broadcast: the general loop
		parallel.Elems(len(dst), func(lo, hi int) {
			kk, r := oi.Walk(lo)
			for i := lo; i < hi; i++ {
				dst[i] = 0 + float32(float64(g[i])*(1/float64(c[kk])))
				kk, r = oi.Next(kk, r)
			}
		})
	case op == "Add" || op == "Sub" && k == 0:
		parallel.Elems(len(dst), func(lo, hi int) { vmath.PlusZero32(dst[lo:hi], g[lo:hi]) })
	case op == "Sub":
		parallel.Elems(len(dst), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				dst[i] = 0 + -g[i]
			}
		})
	case op == "Mul":
		o := c
		if k == 1 {
			o = a
		}
		if len(o) == 1 {
			s := o[0]
			parallel.Elems(len(dst), func(lo, hi int) {
				for i := lo; i < hi; i++ {
					dst[i] = 0 + g[i]*s
				}
			})
			return true
		}
		if oi.Idx != nil {
			parallel.Elems(len(dst), func(lo, hi int) {
				for i := lo; i < hi; i++ {
					dst[i] = 0 + g[i]*o[oi.Idx[i]]
				}
			})
			return true
		}
		if oi.Inner >= minVecRun { // 0 + g·s is s·g + 0
			parallel.Elems(len(dst), func(lo, hi int) {
				bcastRuns(oi, lo, hi, func(i, n, k int) {
					vmath.AffineRelu32(dst[i:i+n], g[i:i+n], o[k], 0, false)
				})
			})
			return true
		}
		parallel.Elems(len(dst), func(lo, hi int) {
			k, r := oi.Walk(lo)
			for i := lo; i < hi; i++ {
				dst[i] = 0 + g[i]*o[k]
				k, r = oi.Next(k, r)
			}
		})
	default:
		return false
	}
	return true
}

// arithGradReduce32 writes into dst the gradient of a broadcast input k:
// each element sums the terms g·∂ of the output elements it reaches, in
// float64, in the order of the float64 path (ascending output index), and
// is rounded once, so the bits are the float64 path's. d is the op's
// partial derivative for the general case; Add, Sub and Mul have their
// own loops. acc is zeroed scratch of len(dst).
func arithGradReduce32(op string, k int, dst []float32, acc []float64, a, c, y, g []float32, ia, ib *shape.Bcast, d func(a, b, y float64) float64) {
	b, o, oi := ia, c, ib // the input k's broadcast, the other operand's
	if k == 1 {
		b, o, oi = ib, a, ia
	}
	if b.Idx == nil && (op == "Add" || op == "Sub" || op == "Mul") {
		reducePattern32(op, k, dst, acc, o, g, oi, b)
		return
	}
	kk, r := 0, 0 // input k's element and its run position (b.walk)
	if b.Idx == nil {
		kk, r = b.Walk(0)
	}
	switch {
	case op == "Add" || op == "Sub" && k == 0, op == "Sub":
		neg := op == "Sub" && k == 1
		for i, v := range g {
			t := float64(v)
			if neg {
				t = -t
			}
			if b.Idx != nil {
				acc[b.Idx[i]] += t
				continue
			}
			acc[kk] += t
			kk, r = b.Next(kk, r)
		}
	case op == "Mul":
		for i, v := range g {
			t := float64(v) * float64(o[atB(oi, i)])
			if b.Idx != nil {
				acc[b.Idx[i]] += t
				continue
			}
			acc[kk] += t
			kk, r = b.Next(kk, r)
		}
	default:
		for i, v := range g {
			var yi float64
			if y != nil {
				yi = float64(y[i])
			}
			acc[b.At(i)] += float64(v) * d(float64(a[atB(ia, i)]), float64(c[atB(ib, i)]), yi)
		}
	}
	for i, v := range acc {
		dst[i] = float32(v)
	}
}

// atB is b.at(i), i for the identity (b nil).
func atB(b *shape.Bcast, i int) int {
	if b == nil {
		return i
	}
	return b.At(i)
}

// reducePattern32 is arithGradReduce32 of Add, Sub or Mul for an input
// broadcast along one block of axes (b: mid elements, each repeated over
// runs of inner, outer times): the elements are split across goroutines,
// and each sums its terms in ascending output order, as the float64 path
// does, so the bits do not depend on the split.
func reducePattern32(op string, k int, dst []float32, acc []float64, o, g []float32, oi *shape.Bcast, b *shape.Bcast) {
	mid, inner := b.Mid, b.Inner
	outer := len(g) / (mid * inner)
	neg := op == "Sub" && k == 1
	mul := op == "Mul"
	if inner == 1 && !mul {
		// A bias over the last axis (a Linear's, [outer, mid] rows): one
		// add per term, row by row, no branch per term, acc[e]'s terms
		// still in ascending output order.
		parallel.Items(mid, outer, func(lo, hi int) {
			a := acc[lo:hi]
			for ob := 0; ob < outer; ob++ {
				gr := g[ob*mid+lo : ob*mid+hi]
				if neg {
					for e, v := range gr {
						a[e] -= float64(v)
					}
					continue
				}
				vmath.AddTo64(a, gr)
			}
			for e := lo; e < hi; e++ {
				dst[e] = float32(acc[e])
			}
		})
		return
	}
	parallel.Items(mid, outer*inner, func(lo, hi int) {
		for ob := 0; ob < outer; ob++ {
			e := lo
			if !neg && (!mul || oi == nil) {
				// Eight elements' runs at a time in vector lanes, then
				// four: independent chains of additions, each in its
				// own order.
				for ; e+8 <= hi; e += 8 {
					base := (ob*mid + e) * inner
					if mul {
						vmath.AddProdRuns8((*[8]float64)(acc[e:]), g[base:], o[base:], inner, nil, nil)
					} else {
						vmath.AddRuns8((*[8]float64)(acc[e:]), g[base:], inner)
					}
				}
				for ; e+4 <= hi; e += 4 {
					base := (ob*mid + e) * inner
					if mul {
						sumRuns4Mul(acc[e:e+4], g[base:], o[base:], inner)
					} else {
						sumRuns4(acc[e:e+4], g[base:], inner)
					}
				}
			}
			for ; e < hi; e++ {
				base := (ob*mid + e) * inner
				var s float64 = acc[e]
				for i := base; i < base+inner; i++ {
					t := float64(g[i])
					switch {
					case neg:
						t = -t
					case mul:
						t *= float64(o[atB(oi, i)])
					}
					s += t
				}
				acc[e] = s
			}
		}
		for e := lo; e < hi; e++ {
			dst[e] = float32(acc[e])
		}
	})
}

// sumRuns4 adds to acc[r] the n values of run r of the four consecutive
// runs at g, each run in order.
func sumRuns4(acc []float64, g []float32, n int) {
	g0, g1, g2, g3 := g[:n], g[n:][:n], g[2*n:][:n], g[3*n:][:n]
	s0, s1, s2, s3 := acc[0], acc[1], acc[2], acc[3]
	for i, v := range g0 {
		s0 += float64(v)
		s1 += float64(g1[i])
		s2 += float64(g2[i])
		s3 += float64(g3[i])
	}
	acc[0], acc[1], acc[2], acc[3] = s0, s1, s2, s3
}

// sumRuns4Mul is sumRuns4 of the products g·o (o laid out as g).
func sumRuns4Mul(acc []float64, g, o []float32, n int) {
	g0, g1, g2, g3 := g[:n], g[n:][:n], g[2*n:][:n], g[3*n:][:n]
	o0, o1, o2, o3 := o[:n], o[n:][:n], o[2*n:][:n], o[3*n:][:n]
	s0, s1, s2, s3 := acc[0], acc[1], acc[2], acc[3]
	for i, v := range g0 {
		s0 += float64(v) * float64(o0[i])
		s1 += float64(g1[i]) * float64(o1[i])
		s2 += float64(g2[i]) * float64(o2[i])
		s3 += float64(g3[i]) * float64(o3[i])
	}
	acc[0], acc[1], acc[2], acc[3] = s0, s1, s2, s3
}
