package kernels

import (
	"sync"
	"unsafe"

	"gorgonia.org/tensor"
)

// Kernel taps that read only padding for every output are dropped: the
// convolution runs with the smaller kernel of the taps that read input,
// and pads reduced to match, which gives the same outputs (the dropped
// terms are products with the padding's zeros). DeepLabV3's ASPP runs 3×3
// convolutions of dilation 12, 24 and 36 on the 4×4 planes of a 64×64
// input: only the centre tap reads the plane, and they run as 1×1
// products, a ninth of the arithmetic. The weights are copied into the
// smaller kernel for each pass (m·C/group·kH·kW values, small beside the
// products), once per step: the forward pass copies them and the input
// gradients of the backward passes read its copy (trimCache); the smaller
// kernel's weight gradient is spread back into the whole kernel's, zeros
// at the dropped taps.

// trimTaps returns the taps [k0, k1) of window a (k taps) that some of
// its out outputs read inside the input of a.in values.
func trimTaps(a window, k int) (k0, k1 int) {
	k0, k1 = k, 0
	for t := 0; t < k; t++ {
		if lo, hi := validRange(a.out, a.s, t*a.d-a.pb, a.in); lo < hi {
			k0, k1 = min(k0, t), max(k1, t+1)
		}
	}
	return k0, k1
}

// convTrim is a convolution's geometry without its padding-only taps.
type convTrim struct {
	g        convGeom // the smaller kernel's geometry
	ky0, kx0 int      // its first tap in the whole kernel
	cache    trimCache
}

// trimCache is the smaller kernel's weights as the op's last forward pass
// copied them from W, for the input gradients of the backward passes
// that follow it. ASPP's taps are one value of every nine, so a copy
// reads every cache line of W (8.8 MB for each of DeepLabV3's three):
// copied per pass, the forward and each task's input gradient read W
// again. An input gradient uses the copy when its W is the very buffer
// the forward pass read (same address and length). That is exact because
// an input gradient belongs to the forward pass whose output gradient it
// is handed: the backend's program runs every backward pass of an
// evaluation after its forward pass and reads that pass's values, and
// the parameters change only between evaluations (an optimizer's step,
// SetParams), each of which starts with a forward pass that copies the
// taps afresh. So a caller running the input gradient alone must have
// run the forward pass with the same W values since W last changed
// (TestConvTrimWeightsChange). mu is only ever tried: the forward pass
// write-locks it, input gradients (one per task, side by side on forks
// of the program) read-lock it, and one that finds it held copies the
// taps itself.
type trimCache struct {
	mu    sync.RWMutex
	valid bool
	src   any    // []T: W of the forward pass that made w
	w     any    // []T: its taps, m·C/group·kH·kW of the smaller kernel
	bytes *int64 // what w holds, counted in colCacheUsed
}

// trimConv returns g without the taps that read only padding, or nil when
// every tap reads input somewhere (or none does: the output is the bias).
func trimConv(g *convGeom) *convTrim {
	ky0, ky1 := trimTaps(g.y, g.kh)
	kx0, kx1 := trimTaps(g.x, g.kw)
	if g.wholeKernel || ky1 <= ky0 || kx1 <= kx0 || ky1-ky0 == g.kh && kx1-kx0 == g.kw {
		return nil
	}
	pads := []int{g.y.pb - ky0*g.y.d, g.x.pb - kx0*g.x.d, g.y.pe - (g.kh-ky1)*g.y.d, g.x.pe - (g.kw-kx1)*g.x.d}
	for _, p := range pads {
		if p < 0 {
			return nil
		}
	}
	t, err := newConvGeom(tensor.Shape{g.n, g.c, g.h, g.w}, tensor.Shape{g.m, g.cg, ky1 - ky0, kx1 - kx0},
		ConvParams{Group: g.g, Strides: []int{g.y.s, g.x.s}, Dilations: []int{g.y.d, g.x.d}, Pads: pads})
	if err != nil || t.oh != g.oh || t.ow != g.ow {
		return nil
	}
	tr := &convTrim{g: t, ky0: ky0, kx0: kx0}
	tr.cache.bytes = cacheBytes(tr)
	return tr
}

// trimWeights copies the taps of the smaller kernel out of the whole
// kernel w (g's) into a scratch buffer; give it back with
// colScratch.pool.Put.
func trimWeights[T float](g *convGeom, tr *convTrim, w []T) *[]T {
	buf := getScratch[T](&colScratch, tr.g.m*tr.g.colRows)
	trimInto(g, tr, w, *buf)
	return buf
}

// trimInto writes the taps of the smaller kernel out of the whole kernel
// w (g's) into d. The taps are moved by element loops: ASPP's are one
// value of every nine, and a copy call per value cost more than the move.
func trimInto[T float](g *convGeom, tr *convTrim, w, d []T) {
	t := &tr.g
	nf, K, k := g.m*g.cg, g.kh*g.kw, t.kh*t.kw
	src := w[tr.ky0*g.kw+tr.kx0:]
	if k == 1 {
		for f, i := 0, 0; f < nf; f, i = f+1, i+K {
			d[f] = src[i]
		}
		return
	}
	for f := 0; f < nf; f++ {
		s, o := src[f*K:], d[f*k:][:k]
		for ky := 0; ky < t.kh; ky++ {
			sr, or := s[ky*g.kw:][:t.kw], o[ky*t.kw:][:t.kw]
			for i := range or {
				or[i] = sr[i]
			}
		}
	}
}

// spreadWeights writes the smaller kernel's weight gradient dt into the
// whole kernel's dw, every element (zeros at the dropped taps), in one
// pass over dw: a block of spreadBlock filters is cleared (a few KB, one
// clear call) and its taps written while it is in the core's cache, so
// each line of dw goes out to memory once. The taps are moved by element
// loops: ASPP's are one value of every nine, and a copy call per value
// cost more than the clear of the whole gradient.
func spreadWeights[T float](g *convGeom, tr *convTrim, dt, dw []T) {
	t := &tr.g
	nf, K, k := g.m*g.cg, g.kh*g.kw, t.kh*t.kw
	off := tr.ky0*g.kw + tr.kx0
	for f0 := 0; f0 < nf; f0 += spreadBlock {
		f1 := min(f0+spreadBlock, nf)
		o := dw[f0*K : f1*K]
		clear(o)
		s := dt[f0*k : f1*k]
		if k == 1 {
			o = o[off:]
			for f, v := range s {
				o[f*K] = v
			}
			continue
		}
		for f := 0; f < f1-f0; f++ {
			of, sf := o[f*K+off:], s[f*k:][:k]
			for ky := 0; ky < t.kh; ky++ {
				or, sr := of[ky*g.kw:][:t.kw], sf[ky*t.kw:][:t.kw]
				for i := range or {
					or[i] = sr[i]
				}
			}
		}
	}
}

// spreadBlock is how many filters spreadWeights clears at once: 256 of
// 3×3 float32 taps are 9 KB, well inside a core's first-level cache.
const spreadBlock = 256

// forwardWeights returns the smaller kernel's weights copied from w for
// a forward pass, into the op's cache when it can take the cache (within
// ColCacheTotal) and into scratch otherwise; call release when done.
func forwardWeights[T float](g *convGeom, tr *convTrim, w []T) (t []T, release func()) {
	c := &tr.cache
	if !c.mu.TryLock() {
		buf := trimWeights(g, tr, w)
		return *buf, func() { colScratch.pool.Put(buf) }
	}
	c.valid = false
	n := tr.g.m * tr.g.colRows
	t, ok := c.w.([]T)
	if !ok || len(t) != n {
		var z T
		need := int64(n) * int64(unsafe.Sizeof(z))
		if !reserveCache(c.bytes, need) {
			c.w, c.src = nil, nil
			c.mu.Unlock()
			buf := trimWeights(g, tr, w)
			return *buf, func() { colScratch.pool.Put(buf) }
		}
		t = make([]T, n)
		c.w = t
	}
	trimInto(g, tr, w, t)
	c.src, c.valid = w, true
	return t, c.mu.Unlock
}

// gradXWeights returns the smaller kernel's weights for an input
// gradient: the last forward pass's copy when it was made from this very
// W (see trimCache), else a fresh copy; call release when done.
func gradXWeights[T float](g *convGeom, tr *convTrim, w []T) (t []T, release func()) {
	c := &tr.cache
	if c.mu.TryRLock() {
		src, ok1 := c.src.([]T)
		t, ok2 := c.w.([]T)
		if c.valid && ok1 && ok2 && len(w) > 0 && len(src) == len(w) && &src[0] == &w[0] {
			return t, c.mu.RUnlock
		}
		c.mu.RUnlock()
	}
	buf := trimWeights(g, tr, w)
	return *buf, func() { colScratch.pool.Put(buf) }
}

// trimmedForward is convForward with the smaller kernel.
func trimmedForward[T float](g *convGeom, tr *convTrim, sc *scratch, xt, wt, bt tensor.Tensor, out []T) tensor.Tensor {
	w, release := forwardWeights(g, tr, data[T](wt))
	defer release()
	return convForward(&tr.g, sc, xt, newTensor(tensor.Shape{tr.g.m, tr.g.cg, tr.g.kh, tr.g.kw}, w), bt, out)
}

// trimmedGradX is convGradX with the smaller kernel.
func trimmedGradX[T float](g *convGeom, tr *convTrim, sc *scratch, wt, gyt tensor.Tensor, dx []T) tensor.Tensor {
	w, release := gradXWeights(g, tr, data[T](wt))
	defer release()
	return convGradX(&tr.g, sc, newTensor(tensor.Shape{tr.g.m, tr.g.cg, tr.g.kh, tr.g.kw}, w), gyt, dx)
}

// trimmedGradW writes the weight gradient into dw (any contents): the
// smaller kernel's, spread into the whole kernel's.
func trimmedGradW[T float](g *convGeom, tr *convTrim, sc *scratch, xt, gyt tensor.Tensor, dw []T) tensor.Tensor {
	buf := getScratch[T](&colScratch, tr.g.m*tr.g.colRows)
	defer colScratch.pool.Put(buf)
	dt := *buf
	t := &tr.g
	switch {
	case depthwiseOK(t) || groupedOK(t): // write every element
		convGradWInto(t, sc, xt, gyt, dt)
	case batchedPlanes(t) && !winogradGradWOK(t): // with beta 0, writes every element
		convGradWBatched(t, sc, data[T](xt), data[T](gyt), dt, 0)
	default:
		clear(dt)
		convGradWInto(t, sc, xt, gyt, dt)
	}
	spreadWeights(g, tr, dt, dw)
	return newTensor(tensor.Shape{g.m, g.cg, g.kh, g.kw}, dw)
}

// ConvTrimmed reports whether a convolution of input shape xs and filters
// ws with parameters p runs with a smaller kernel (taps reading only
// padding dropped).
func ConvTrimmed(xs, ws []int, p ConvParams) bool {
	g, err := newConvGeom(xs, ws, p)
	return err == nil && trimConv(&g) != nil
}
