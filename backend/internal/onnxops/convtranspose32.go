package onnxops

import (
	"sync"
)

// ConvTranspose in float32 graphs. Per sample and group, with K =
// mPerG·kh·kw taps and P = h·w input positions, and W's rows of the group
// a cPerG × K matrix:
//
//	forward  col (K×P) = Wᵀ·X, then col2im adds col into Y (plus bias)
//	∂X       col (K×P) = im2col(∂Y), ∂X (cPerG×P) = W·col
//	∂W       ∂W (cPerG×K) += X·colᵀ, summed over the samples
//
// where col's row (mi, ki, kj) holds, at input position (i, j), the output
// element (i·sh − pt + ki·dh, j·sw − pl + kj·dw) when it lies inside the
// output. The products accumulate in float32 like Conv's (the exception to
// graph.Forward32Func's rule for matrix products); the bias gradient sums
// in float64 in the float64 kernel's order, rounded once.

// ctScratch holds im2col matrices between calls.
var ctScratch = sync.Pool{New: func() any { return new([]float32) }}

func getCTScratch(n int) *[]float32 {
	p := ctScratch.Get().(*[]float32)
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	return p
}

// tapRange returns the input positions [lo, hi) of n whose output index
// i·s + off falls inside [0, lim).
func tapRange(n, s, off, lim int) (lo, hi int) {
	lo, hi = 0, n
	if off < 0 {
		lo = (-off + s - 1) / s
	}
	if last := lim - 1 - off; last < 0 {
		hi = 0
	} else {
		hi = min(n, last/s+1)
	}
	return lo, max(lo, hi)
}

// col2im adds col (K×P, the taps of one sample and group) into the
// group's output planes y (mPerG planes of oh×ow).
func (p *convTParams) col2im(col, y []float32) {
	hw, plane := p.h*p.w, p.oh*p.ow
	for mi := 0; mi < p.mPerG; mi++ {
		yp := y[mi*plane : (mi+1)*plane]
		for kh := 0; kh < p.kh; kh++ {
			ilo, ihi := tapRange(p.h, p.sh, kh*p.dh-p.pt, p.oh)
			for kw := 0; kw < p.kw; kw++ {
				off := kw*p.dw - p.pl
				jlo, jhi := tapRange(p.w, p.sw, off, p.ow)
				if jlo >= jhi {
					continue
				}
				row := col[((mi*p.kh+kh)*p.kw+kw)*hw:][:hw]
				for i := ilo; i < ihi; i++ {
					src := row[i*p.w+jlo : i*p.w+jhi]
					dst := yp[(i*p.sh-p.pt+kh*p.dh)*p.ow:][:p.ow]
					if p.sw == 1 {
						dst = dst[jlo+off : jhi+off]
						for j, v := range src {
							dst[j] += v
						}
						continue
					}
					o := jlo*p.sw + off
					for _, v := range src {
						dst[o] += v
						o += p.sw
					}
				}
			}
		}
	}
}

// im2col writes into col (K×P) the taps of the group's output gradient
// planes gy (mPerG planes of oh×ow), zero where a tap leaves the output.
func (p *convTParams) im2col(gy, col []float32) {
	hw, plane := p.h*p.w, p.oh*p.ow
	for mi := 0; mi < p.mPerG; mi++ {
		gp := gy[mi*plane : (mi+1)*plane]
		for kh := 0; kh < p.kh; kh++ {
			ilo, ihi := tapRange(p.h, p.sh, kh*p.dh-p.pt, p.oh)
			for kw := 0; kw < p.kw; kw++ {
				off := kw*p.dw - p.pl
				jlo, jhi := tapRange(p.w, p.sw, off, p.ow)
				row := col[((mi*p.kh+kh)*p.kw+kw)*hw:][:hw]
				if jlo >= jhi || ilo >= ihi {
					clear(row)
					continue
				}
				clear(row[:ilo*p.w])
				clear(row[ihi*p.w:])
				for i := ilo; i < ihi; i++ {
					dst := row[i*p.w : (i+1)*p.w]
					clear(dst[:jlo])
					clear(dst[jhi:])
					src := gp[(i*p.sh-p.pt+kh*p.dh)*p.ow:][:p.ow]
					if p.sw == 1 {
						copy(dst[jlo:jhi], src[jlo+off:jhi+off])
						continue
					}
					o := jlo*p.sw + off
					for j := jlo; j < jhi; j++ {
						dst[j] = src[o]
						o += p.sw
					}
				}
			}
		}
	}
}

func (p *convTParams) forward32(dst []float32, in [][]float32) {
	x, w := in[0], in[1]
	k, hw, plane := p.mPerG*p.kh*p.kw, p.h*p.w, p.oh*p.ow
	if p.hasBias {
		for b := 0; b < p.n; b++ {
			for mo := 0; mo < p.m; mo++ {
				v := in[2][mo]
				o := dst[(b*p.m+mo)*plane:][:plane]
				for i := range o {
					o[i] = v
				}
			}
		}
	} else {
		clear(dst) // a reused buffer is not zeroed first (the kernel fills)
	}
	sc := getCTScratch(k * hw)
	defer ctScratch.Put(sc)
	col := *sc
	for b := 0; b < p.n; b++ {
		for g := 0; g < p.g; g++ {
			xg := x[(b*p.c+g*p.cPerG)*hw:][:p.cPerG*hw]
			wg := w[g*p.cPerG*k:][:p.cPerG*k]
			sgemm32(true, false, k, hw, p.cPerG, 1, wg, xg, 0, col)
			p.col2im(col, dst[(b*p.m+g*p.mPerG)*plane:][:p.mPerG*plane])
		}
	}
}

func (p *convTParams) backward32(kIn int, dst []float32, in [][]float32, _, gy []float32) bool {
	x, w := in[0], in[1]
	k, hw, plane := p.mPerG*p.kh*p.kw, p.h*p.w, p.oh*p.ow
	switch kIn {
	case 0, 1:
		sc := getCTScratch(k * hw)
		defer ctScratch.Put(sc)
		col := *sc
		for b := 0; b < p.n; b++ {
			for g := 0; g < p.g; g++ {
				p.im2col(gy[(b*p.m+g*p.mPerG)*plane:][:p.mPerG*plane], col)
				if kIn == 0 {
					wg := w[g*p.cPerG*k:][:p.cPerG*k]
					sgemm32(false, false, p.cPerG, hw, k, 1, wg, col, 0, dst[(b*p.c+g*p.cPerG)*hw:][:p.cPerG*hw])
					continue
				}
				xg := x[(b*p.c+g*p.cPerG)*hw:][:p.cPerG*hw]
				beta := float32(1)
				if b == 0 {
					beta = 0
				}
				sgemm32(false, true, p.cPerG, k, hw, 1, xg, col, beta, dst[g*p.cPerG*k:][:p.cPerG*k])
			}
		}
		return true
	case 2:
		for mo := 0; mo < p.m; mo++ {
			var s float64
			for b := 0; b < p.n; b++ {
				for _, v := range gy[(b*p.m+mo)*plane:][:plane] {
					s += float64(v)
				}
			}
			dst[mo] = float32(s)
		}
		return true
	}
	return false
}
