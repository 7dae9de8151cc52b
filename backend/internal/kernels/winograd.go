package kernels

import (
	"runtime"
	"sync/atomic"

	fgemm "github.com/paretonav/paretonav/backend/internal/gemm"
	"github.com/paretonav/paretonav/backend/internal/vmath"
)

// useWinograd enables the F(2×2, 3×3) Winograd convolution (winogradOK);
// tests turn it off to compare with the im2col paths.
var useWinograd = true

// winoMinChannels is the fewest input and output channels, and
// winoMinPlaneTiles the fewest tiles (2×2 outputs) of all samples' planes,
// for which a 3×3 convolution runs as Winograd F(2×2, 3×3): below them the
// transforms and the filters' transform cost more than the 2.25× fewer
// multiplications save. The bounds compare the CPU time of the two
// paths for one convolution, work that grows with the filters and tiles,
// not with the cores: the workers split both paths alike.
// BenchmarkConvWinograd (the full MTAN's 3×3 layers at 64×96, batch 4,
// CPU time as Winograd / im2col on this repository's AMD EPYC, one
// worker): on 384 tiles and more (16×24 and larger planes) 0.44–0.75 in
// every pass; on 96 tiles (8×12) 0.60–0.79 forward, 0.63–0.76 input
// gradient, 0.84–0.95 weight gradient over the four 8×12 shapes (on
// two workers 0.76–0.95 before the transforms' vector tails); on 24
// (4×6, 512 channels) 1.6–2.0: the filters' transform and the products'
// packing, fixed costs of the filters, outweigh products of 24 columns.
// The whole 64×96 step took 4–5% less CPU time with the 8×12 layers as
// Winograd (bench step --cpuprofile, one worker, runs interleaved). With
// 32 channels in and out (the UNet twin's 32-channel layers at 32×32 and
// 16×16, batch 2: 128 to 512 tiles) the UNet step took 5–8% less CPU time
// than with those layers as im2col, the MTAN steps of BenchmarkStep the
// same within the noise (one worker, runs interleaved). At 16 channels
// (the UNet's 16-channel layers at 64×64, batch 2: 2048 tiles) the
// forward pass and the input gradient took about a third less CPU time
// as Winograd but the weight gradient about two fifths more (products of
// 16 rows: the transforms of the input and of the output gradient cost
// more than the multiplications saved), so the weight gradient runs as
// Winograd only from winoMinChannelsGradW channels in and out.
var (
	winoMinChannels      = 16
	winoMinChannelsGradW = 32
	winoMinPlaneTiles    = 96
)

// winogradOK reports whether g runs as Winograd F(2×2, 3×3): a 3×3
// kernel, stride and dilation 1, one group, padding 1 on every side (the
// output plane is the input's), at least winoMinChannels channels in and
// out, and at least winoMinPlaneTiles tiles over the samples' planes.
func winogradOK(g *convGeom) bool {
	return useWinograd && g.kh == 3 && g.kw == 3 && g.g == 1 && !g.direct &&
		g.y.s == 1 && g.x.s == 1 && g.y.d == 1 && g.x.d == 1 &&
		g.y.pb == 1 && g.y.pe == 1 && g.x.pb == 1 && g.x.pe == 1 &&
		g.c >= winoMinChannels && g.m >= winoMinChannels && g.oh == g.h && g.ow == g.w &&
		g.n*((g.h+1)/2)*((g.w+1)/2) >= winoMinPlaneTiles
}

// winogradGradWOK reports whether g's weight gradient runs as Winograd:
// winogradOK with at least winoMinChannelsGradW channels in and out.
func winogradGradWOK(g *convGeom) bool {
	return winogradOK(g) && g.c >= winoMinChannelsGradW && g.m >= winoMinChannelsGradW
}

// The F(2×2, 3×3) transforms (Lavin and Gray, 2016): an output tile of
// 2×2 is Aᵀ[(G·w·Gᵀ) ⊙ (Bᵀ·d·B)]A for the 4×4 input tile d at rows
// 2ty−1…2ty+2 and columns 2tx−1…2tx+2, with
//
//	Bᵀ = [1 0 −1 0; 0 1 1 0; 0 −1 1 0; 0 1 0 −1]
//	G  = [1 0 0; ½ ½ ½; ½ −½ ½; 0 0 1]
//	Aᵀ = [1 1 1 0; 0 1 −1 −1]
//
// Summed over the input channels, each of the 16 positions ξ of the
// transformed tile is one matrix product over all tiles:
// M[ξ] (m × tiles) = U[ξ] (m × c) · V[ξ] (c × tiles). The weight gradient
// is Gᵀ·dU·G with dU[ξ] = Z[ξ]·V[ξ]ᵀ, Z = A·dy·Aᵀ of the output
// gradient's tiles.

// winoGeom is the tiling of a Winograd convolution: th×tw tiles a plane,
// tiles numbered p = (sample·th + ty)·tw + tx, taken in chunks of at most
// ld tiles (the products' columns).
type winoGeom struct {
	n, c, m, h, w int
	th, tw, tiles int
	ld            int
	vs, ms        int // the strides of V's and M's 16 planes (xiStride)
}

// xiStride is the distance between the 16 planes ξ of a transformed
// matrix of n values: n and one cache line. The transforms read or write
// all 16 planes at once; planes a multiple of 4 KB apart (64 channels of
// 48 tiles: 12 KB) fall into the same L1 sets and evict each other, which
// made the input transform four times slower.
func xiStride(n int) int { return n + 16 }

// newWinoGeom tiles an n·c·h·w input for m filters in chunks of ld tiles.
func newWinoGeom(n, c, m, h, w, ld int) winoGeom {
	wg := winoGeom{n: n, c: c, m: m, h: h, w: w, th: (h + 1) / 2, tw: (w + 1) / 2}
	wg.tiles = n * wg.th * wg.tw
	wg.ld = max(1, min(ld, wg.tiles))
	wg.vs, wg.ms = xiStride(c*wg.ld), xiStride(m*wg.ld)
	return wg
}

// chunks is the number of chunks of ld tiles.
func (wg *winoGeom) chunks() int { return (wg.tiles + wg.ld - 1) / wg.ld }

// chunk returns the tiles [p0, p1) of chunk k.
func (wg *winoGeom) chunk(k int) (p0, p1 int) { return k * wg.ld, min(wg.tiles, (k+1)*wg.ld) }

// winoBlockTiles is the tiles of a chunk that one worker transforms,
// multiplies and transforms back on its own: a multiple of the products'
// 32-column micro-kernel, with its transformed values (16·(c+m) a tile)
// near winoBlockElems (a core's L2).
func winoBlockTiles(c, m int) int {
	return max(winoMinTiles, winoBlockElems/(16*(c+m))/winoMinTiles*winoMinTiles)
}

// winoBlockElems is the transformed values of one worker's chunk of tiles
// (within its core's L2), winoMinTiles the fewest tiles a chunk takes
// (the products' micro-kernel is 32 columns wide), and winoChunkElems
// bounds the transformed values of the chunks that all workers share
// (planes of too few tiles to share out, and weight gradients of large
// filters: winoOwnGradElems).
var (
	winoBlockElems = 1 << 18
	winoMinTiles   = 32
	winoChunkElems = 1 << 22
)

// filterTransform writes U[ξ][m][c] = (G·w[m][c]·Gᵀ)[ξ] for filters w
// [m][c][3][3] into u (16 planes of m·c, xiStride(m·c) apart).
func filterTransform[T float](w, u []T, m, c int) {
	mc := xiStride(m * c)
	parallelFor(m, func(_, lo, hi int) {
		vmath.WinoFilter(w[lo*c*9:hi*c*9], 9, u[lo*c:], mc, (hi-lo)*c)
	})
}

// filterTransformT writes the transposes of filterTransform's planes,
// U[ξ]ᵀ[c][m] = (G·w[m][c]·Gᵀ)[ξ], into u (16 planes of c·m,
// xiStride(m·c) apart): column c of w's filters, 9·c values apart, at a
// time.
func filterTransformT[T float](w, u []T, m, c int) {
	mc := xiStride(m * c)
	parallelFor(c, func(_, lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			vmath.WinoFilter(w[ci*9:], 9*c, u[ci*m:], mc, m)
		}
	})
}

// inputTransform writes V[ξ][c][q] = (Bᵀ·d·B)[ξ] for the tiles [p0, p1)
// of x (n·c·h·w) into v (16 planes of c·ld, wg.vs apart; q = p − p0),
// for the channels [c0, c1). The input rows go zero-padded into a buffer
// once each: consecutive tile rows of a plane share two rows, which the
// buffer keeps (rows 2ty−1…2ty+2 of tile row ty at buffer rows
// 2(ty−ty₀)…, ty₀ the first tile row of the plane in [p0, p1)). Buffer
// rows of 2·tw+16 values let vmath.WinoInput's vector kernel take a tile
// row's last tiles too (vmath.WinoInputLd, from any first tile).
func inputTransform[T float](wg *winoGeom, x, v []T, p0, p1, c0, c1 int) {
	cl := wg.vs
	ld := 2*wg.tw + 16
	r0, r1 := p0/wg.tw, (p1+wg.tw-1)/wg.tw // the tile rows of [p0, p1)
	bp := getScratch[T](&colScratch, (2*(r1-r0)+2)*ld)
	defer colScratch.pool.Put(bp)
	buf := *bp
	// fill writes input row y of plane (zeros outside it) into buffer row
	// j: column i of a buffer row is column i−1 of x.
	fill := func(plane []T, j, y int) {
		row := buf[j*ld : (j+1)*ld]
		if y < 0 || y >= wg.h {
			clear(row)
			return
		}
		row[0] = 0
		copy(row[1:], plane[y*wg.w:(y+1)*wg.w])
		clear(row[1+wg.w:])
	}
	for c := c0; c < c1; c++ {
		first := r0 // the tile row whose rows start the buffer
		for r := r0; r < r1; r++ {
			img, ty := r/wg.th, r%wg.th
			plane := x[(img*wg.c+c)*wg.h*wg.w:][:wg.h*wg.w]
			if r == r0 || ty == 0 {
				first = r
				for i := 0; i < 4; i++ {
					fill(plane, i, 2*ty-1+i)
				}
			} else {
				j := 2 * (r - first)
				fill(plane, j+2, 2*ty+1)
				fill(plane, j+3, 2*ty+2)
			}
			tx0, tx1 := max(0, p0-r*wg.tw), min(wg.tw, p1-r*wg.tw)
			vmath.WinoInput(buf[2*(r-first)*ld+2*tx0:], ld, v[c*wg.ld+r*wg.tw-p0+tx0:], cl, tx1-tx0)
		}
	}
}

// outputTransform writes the output tiles Aᵀ·M·A (plus bias b, when
// given) of tiles [p0, p1) from mx (16 planes of m·ld, wg.ms apart) into
// out (n·m·h·w), for the filters [m0, m1), and reports whether every
// value it wrote is finite (vmath.WinoOutput's check, on values still in
// cache: see winoChecked).
func outputTransform[T float](wg *winoGeom, mx, b, out []T, p0, p1, m0, m1 int) (finite bool) {
	var spare [4 * 66]T
	finite = true
	for m := m0; m < m1; m++ {
		var bias T
		if b != nil {
			bias = b[m]
		}
		for r := p0 / wg.tw; r*wg.tw < p1; r++ {
			img, ty := r/wg.th, r%wg.th
			tx0, tx1 := max(0, p0-r*wg.tw), min(wg.tw, p1-r*wg.tw)
			plane := out[(img*wg.m+m)*wg.h*wg.w:][:wg.h*wg.w]
			y0, y1, full := tileRows(wg, plane, ty, tx0, tx1, spare[:])
			if !vmath.WinoOutput(mx[m*wg.ld+r*wg.tw-p0+tx0:], wg.ms, y0, y1, tx1-tx0, bias) {
				finite = false
			}
			if !full {
				edgeRows(wg, plane, ty, tx0, y0, y1, true)
			}
		}
	}
	return finite
}

// gradTransform writes Z[ξ][m][q] = (A·dy·Aᵀ)[ξ] for the output
// gradient's tiles [p0, p1) (zeros past the plane's edge) into z (16
// planes of m·ld, wg.ms apart), for the filters [m0, m1).
func gradTransform[T float](wg *winoGeom, gy, z []T, p0, p1, m0, m1 int) {
	var spare [4 * 66]T
	for m := m0; m < m1; m++ {
		for r := p0 / wg.tw; r*wg.tw < p1; r++ {
			img, ty := r/wg.th, r%wg.th
			tx0, tx1 := max(0, p0-r*wg.tw), min(wg.tw, p1-r*wg.tw)
			plane := gy[(img*wg.m+m)*wg.h*wg.w:][:wg.h*wg.w]
			y0, y1, full := tileRows(wg, plane, ty, tx0, tx1, spare[:])
			if !full {
				edgeRows(wg, plane, ty, tx0, y0, y1, false)
			}
			vmath.WinoGrad(y0, y1, z[m*wg.ld+r*wg.tw-p0+tx0:], wg.ms, tx1-tx0)
		}
	}
}

// tileRows returns the two rows of a plane (h×w) under the tiles
// [tx0, tx1) of tile row ty, two columns a tile, and true; or, where an
// odd plane's last row or column falls in them, two rows of spare (or of
// a new slice when spare is short) and false: edgeRows moves the values.
func tileRows[T float](wg *winoGeom, plane []T, ty, tx0, tx1 int, spare []T) (y0, y1 []T, full bool) {
	n := tx1 - tx0
	if 2*tx1 <= wg.w && 2*ty+1 < wg.h {
		return plane[2*ty*wg.w+2*tx0:][:2*n], plane[(2*ty+1)*wg.w+2*tx0:][:2*n], true
	}
	if 4*n > len(spare) {
		spare = make([]T, 4*n)
	}
	return spare[:2*n], spare[2*n : 4*n], false
}

// edgeRows copies the values of tileRows' spare rows y0, y1 that lie in
// the plane into it (toPlane), or the plane's values into them, zeros
// past its edge.
func edgeRows[T float](wg *winoGeom, plane []T, ty, tx0 int, y0, y1 []T, toPlane bool) {
	x0 := 2 * tx0
	k := min(len(y0), wg.w-x0)
	for i, y := range [2][]T{y0, y1} {
		row := 2*ty + i
		if !toPlane {
			clear(y)
		}
		if row >= wg.h {
			continue
		}
		if toPlane {
			copy(plane[row*wg.w+x0:][:k], y)
		} else {
			copy(y, plane[row*wg.w+x0:][:k])
		}
	}
}

// filterGradTransform adds Gᵀ·dU[m][c]·G (3×3) for the transformed
// gradient du (16 planes of m·c, xiStride(m·c) apart) into dw (m·c·3·3)
// and reports whether every value of dw it wrote is finite.
func filterGradTransform[T float](du, dw []T, m, c int) (finite bool) {
	mc := xiStride(m * c)
	var bad atomic.Bool
	parallelFor(m, func(_, lo, hi int) {
		if !vmath.WinoFilterGrad(du[lo*c:], mc, dw[lo*c*9:hi*c*9], (hi-lo)*c) {
			bad.Store(true)
		}
	})
	return !bad.Load()
}

// winoForward writes the convolution of x (n·c·h·w) with filters w
// (m·c·3·3, padding 1) plus bias b (m values, or nil) into out
// (n·m·h·w, any contents: every element is written): the filters'
// transform, then winoRun. It reports whether every output value is
// finite.
func winoForward[T float](n, c, m, h, w int, x, wt, b, out []T) (finite bool) {
	ub := getScratch[T](&colScratch, 16*xiStride(m*c))
	defer colScratch.pool.Put(ub)
	u := (*ub)[:16*xiStride(m*c)]
	filterTransform(wt, u, m, c)
	mul := winoProducts(u, m, c, false)
	defer mul.release()
	return winoRun(n, c, m, h, w, x, mul, b, out)
}

// winoRun writes the convolution of x (n·c·h·w) whose transformed
// filters mul multiplies, plus bias b (m values, or nil), into out
// (n·m·h·w, any contents: every element is written). With chunks enough
// for every worker, each worker takes whole chunks (transform, 16
// products, inverse transform) so that a chunk's transformed tiles stay
// in its core's cache; otherwise all workers share each chunk's steps.
// It reports whether every output value is finite.
func winoRun[T float](n, c, m, h, w int, x []T, mul *winoMul[T], b, out []T) (finite bool) {
	var bad atomic.Bool // some output value is not finite
	wg, own := winoOwnChunks(n, c, m, h, w)
	if own {
		parallelFor(wg.chunks(), func(_, lo, hi int) {
			buf := getScratch[T](&colScratch, 16*(wg.vs+wg.ms))
			defer colScratch.pool.Put(buf)
			v, mx := (*buf)[:16*wg.vs], (*buf)[16*wg.vs:][:16*wg.ms]
			for k := lo; k < hi; k++ {
				p0, p1 := wg.chunk(k)
				inputTransform(&wg, x, v, p0, p1, 0, c)
				for xi := 0; xi < 16; xi++ {
					mul.product(xi, p1-p0, v[xi*wg.vs:], wg.ld, mx[xi*wg.ms:], wg.ld)
				}
				if !outputTransform(&wg, mx, b, out, p0, p1, 0, m) {
					bad.Store(true)
				}
			}
		})
		return !bad.Load()
	}
	buf := getScratch[T](&colScratch, 16*(wg.vs+wg.ms))
	defer colScratch.pool.Put(buf)
	v, mx := (*buf)[:16*wg.vs], (*buf)[16*wg.vs:][:16*wg.ms]
	for k := 0; k < wg.chunks(); k++ {
		p0, p1 := wg.chunk(k)
		parallelFor(c, func(_, lo, hi int) { inputTransform(&wg, x, v, p0, p1, lo, hi) })
		q, nb := p1-p0, winoSplit(runtime.GOMAXPROCS(0), p1-p0)
		cb := (q + nb - 1) / nb
		parallelFor(16*nb, func(_, lo, hi int) {
			for t := lo; t < hi; t++ {
				xi, j0 := t/nb, t%nb*cb
				if j1 := min(j0+cb, q); j0 < j1 {
					mul.product(xi, j1-j0, v[xi*wg.vs+j0:], wg.ld, mx[xi*wg.ms+j0:], wg.ld)
				}
			}
		})
		parallelFor(m, func(_, lo, hi int) {
			if !outputTransform(&wg, mx, b, out, p0, p1, lo, hi) {
				bad.Store(true)
			}
		})
	}
	return !bad.Load()
}

// winoMul multiplies the 16 transformed filter matrices A[ξ] (m×c) by a
// chunk's V[ξ]: float32 products on A packed once per call. A[ξ] is plane
// ξ of u (16 planes of m×c), or, for the input gradient (flip), plane
// π(ξ) of u holding the forward filters' transform transposed
// (filterTransformT): A[ξ] = U[π(ξ)]ᵀ, see winoFlip.
type winoMul[T float] struct {
	u      []T
	m, c   int
	flip   bool
	packed []fgemm.PackedA
	buf    *[]float32 // the 16 packed matrices, PackedALen(m, c) apart
}

// winoFlip is π: the input gradient is the forward convolution of the
// output gradient with the flipped, channel-transposed filters
// rot180(w[m][c]) (convGradXAsForward), and for F(2×2, 3×3) their
// transform is the forward one's with its ξ permuted. Reversing the
// three taps, G·J = P·G with P the permutation swapping rows 0 and 3 of
// G's four, so G·rot180(w)·Gᵀ = G·J·w·J·Gᵀ = P·(G·w·Gᵀ)·Pᵀ: the value ξ =
// 4r+s of a flipped filter's transform is the value π(ξ) = 4p(r)+p(s), p
// swapping 0 and 3, of the filter's own. The input gradient therefore
// multiplies by U[π(ξ)]ᵀ, reading the forward pass's transform of w in
// place of a flipped, transposed copy of w and its transform.
// filterTransformT writes the transposes U[ξ]ᵀ directly, so that the
// products pack them as they are: packing U[π(ξ)] transposed instead
// took about half as long again (the packed panels read U's columns).
func winoFlip(xi int) int {
	p := [4]int{3, 1, 2, 0}
	return 4*p[xi/4] + p[xi%4]
}

// winoProducts returns the products by the 16 matrices A[ξ] (m×c) of u
// (see winoMul).
func winoProducts[T float](u []T, m, c int, flip bool) *winoMul[T] {
	p := &winoMul[T]{u: u, m: m, c: c, flip: flip}
	if _, ok := any(u).([]float32); ok && usePackFilters && fgemm.Accelerated() {
		p.packed = make([]fgemm.PackedA, 16)
		p.buf = getScratch[float32](&colScratch, 16*fgemm.PackedALen(m, c))
		l := fgemm.PackedALen(m, c)
		parallelFor(16, func(_, lo, hi int) {
			for xi := lo; xi < hi; xi++ {
				p.packed[xi] = fgemm.PackA(false, m, c, any(p.a(xi)).([]float32), c, (*p.buf)[xi*l:][:l])
			}
		})
	}
	return p
}

// a returns A[ξ] (m×c, rows c apart): plane ξ of u, or with flip plane
// π(ξ).
func (p *winoMul[T]) a(xi int) []T {
	if p.flip {
		xi = winoFlip(xi)
	}
	return p.u[xi*xiStride(p.m*p.c):][:p.m*p.c]
}

// product writes A[ξ]·V (m × q, V c × q with rows ldv apart) into out
// (rows ldo apart).
func (p *winoMul[T]) product(xi, q int, v []T, ldv int, out []T, ldo int) {
	if p.packed == nil {
		gemmSerial(false, false, p.m, q, p.c, p.a(xi), p.c, v, ldv, 0, out, ldo)
		return
	}
	fgemm.SgemmPacked(&p.packed[xi], false, q, any(v).([]float32), ldv, 0, any(out).([]float32), ldo)
}

func (p *winoMul[T]) release() {
	if p.buf != nil {
		colScratch.pool.Put(p.buf)
	}
}

// winoGradX writes the input gradient of g (winogradOK) into dx (any
// contents: every element is written): the forward convolution of gy
// with the transposed, flipped filters (see convGradXAsForward), whose
// transform is the forward filters' own, permuted and transposed
// (winoFlip). It reports whether every value of dx is finite.
func winoGradX[T float](g *convGeom, w, gy, dx []T) (finite bool) {
	ub := getScratch[T](&colScratch, 16*xiStride(g.m*g.c))
	defer colScratch.pool.Put(ub)
	u := (*ub)[:16*xiStride(g.m*g.c)]
	filterTransformT(w, u, g.m, g.c)
	mul := winoProducts(u, g.c, g.m, true)
	defer mul.release()
	return winoRun(g.n, g.m, g.c, g.h, g.w, gy, mul, nil, dx)
}

// winoGradW adds the weight gradient of g (winogradOK) for input x and
// output gradient gy into dw (m·c·3·3) and reports whether every value of
// dw is finite. With chunks enough for every
// worker and small filters (winoOwnGradElems), each worker takes whole
// chunks (both transforms and 16 products dU[ξ] += Z[ξ]·V[ξ]ᵀ into its own
// dU, in its cache), and the workers' dU are added in worker order;
// otherwise all workers share each chunk's transforms, and each of the 16
// products belongs to one worker, which sums it over the chunks in order.
func winoGradW[T float](g *convGeom, x, gy, dw []T) (finite bool) {
	us := xiStride(g.m * g.c)
	wg, own := winoGradChunks(g)
	if own {
		acc := make([]*[]T, workers(wg.chunks()))
		parallelFor(wg.chunks(), func(wk, lo, hi int) {
			buf := getScratch[T](&colScratch, 16*(us+wg.vs+wg.ms))
			acc[wk] = buf
			du, v, z := (*buf)[:16*us], (*buf)[16*us:][:16*wg.vs], (*buf)[16*(us+wg.vs):][:16*wg.ms]
			for k := lo; k < hi; k++ {
				p0, p1 := wg.chunk(k)
				var beta T
				if k > lo {
					beta = 1
				}
				inputTransform(&wg, x, v, p0, p1, 0, g.c)
				gradTransform(&wg, gy, z, p0, p1, 0, g.m)
				for xi := 0; xi < 16; xi++ {
					winoGradProduct(g.m, g.c, p1-p0, z[xi*wg.ms:], v[xi*wg.vs:], wg.ld, beta, du[xi*us:])
				}
			}
		})
		du := (*acc[0])[:16*us]
		for _, a := range acc[1:] {
			addTo(du, (*a)[:16*us])
			colScratch.pool.Put(a)
		}
		finite := filterGradTransform(du, dw, g.m, g.c)
		colScratch.pool.Put(acc[0])
		return finite
	}
	buf := getScratch[T](&colScratch, 16*(us+wg.vs+wg.ms))
	defer colScratch.pool.Put(buf)
	du, v, z := (*buf)[:16*us], (*buf)[16*us:][:16*wg.vs], (*buf)[16*(us+wg.vs):][:16*wg.ms]
	for k := 0; k < wg.chunks(); k++ {
		p0, p1 := wg.chunk(k)
		var beta T
		if k > 0 {
			beta = 1
		}
		parallelFor(g.c, func(_, lo, hi int) { inputTransform(&wg, x, v, p0, p1, lo, hi) })
		parallelFor(g.m, func(_, lo, hi int) { gradTransform(&wg, gy, z, p0, p1, lo, hi) })
		nb := winoSplit(runtime.GOMAXPROCS(0), g.m)
		rb := (g.m + nb - 1) / nb
		parallelFor(16*nb, func(_, lo, hi int) {
			for t := lo; t < hi; t++ {
				xi, i0 := t/nb, t%nb*rb
				if i1 := min(i0+rb, g.m); i0 < i1 {
					winoGradProduct(i1-i0, g.c, p1-p0, z[xi*wg.ms+i0*wg.ld:], v[xi*wg.vs:], wg.ld, beta, du[xi*us+i0*g.c:])
				}
			}
		})
	}
	return filterGradTransform(du, dw, g.m, g.c)
}

// winoGradProduct adds z·vᵀ (m×c over k tiles; rows of z and v ld
// apart) into du (m×c), scaled by beta first, on the calling goroutine:
// float32 through the packed panels (gemm.SgemmBlocked), never as dot
// products.
func winoGradProduct[T float](m, c, k int, z, v []T, ld int, beta T, du []T) {
	if z32, ok := any(z).([]float32); ok && fgemm.Accelerated() {
		fgemm.SgemmBlocked(false, true, m, c, k, 1, z32, ld, any(v).([]float32), ld, float32(beta), any(du).([]float32), c)
		return
	}
	gemmSerial(false, true, m, c, k, z, ld, v, ld, beta, du, c)
}

// winoSplit is how many blocks each of the 16 products of a shared chunk
// splits into on w workers, along an axis of n (a forward product's
// tiles, a weight gradient's filters): the 16 products alone keep at most
// 16 workers busy, so on more each splits into about w/16 blocks of at
// least winoMinTiles (the micro-kernel's 32 columns); 1 on up to 16
// workers.
func winoSplit(w, n int) int {
	return max(1, min((w+15)/16, n/winoMinTiles))
}

// winoOwnGradElems bounds the transformed filter gradient (16·m·c values)
// that each worker of a Winograd weight gradient keeps for itself.
var winoOwnGradElems = 1 << 20

// A Winograd pass reports whether every value it wrote is finite (each
// worker checks its values as it writes them). A NaN or infinity in a
// pass's inputs reaches its output (every input value enters the
// transformed tiles with a coefficient ±1), but not always where the
// direct convolution puts it, and a transform of huge finite values may
// overflow where the direct sum does not: when a pass reports false, the
// caller runs its other paths, which write the output anew.

// ConvWinograd reports whether a convolution of input shape xs and
// filters ws with parameters p runs as Winograd F(2×2, 3×3) (its forward
// pass and input gradient; its weight gradient where winogradGradWOK).
func ConvWinograd(xs, ws []int, p ConvParams) bool {
	g, err := newConvGeom(xs, ws, p)
	return err == nil && winogradOK(&g)
}

// WinogradScratchBytes is the most scratch memory, in bytes of float32,
// that one pass of a convolution of input shape xs and filters ws with
// parameters p takes beyond the im2col bands when it runs as Winograd
// (ConvWinograd): the transformed filters and their packed copy, the
// chunks of transformed tiles of every worker (winoRun's and winoGradW's
// buffers) and their input rows (inputTransform's). 0 when it does not
// run as Winograd.
func WinogradScratchBytes(xs, ws []int, p ConvParams) int64 {
	g, err := newConvGeom(xs, ws, p)
	if err != nil || !winogradOK(&g) {
		return 0
	}
	u := 16 * xiStride(g.m*g.c)
	rows := func(wg *winoGeom) int { return workers(max(g.c, g.m)) * winoRowsLen(wg) } // inputTransform's buffers
	most := 0
	for _, mc := range [][2]int{{g.m, g.c}, {g.c, g.m}} { // forward, input gradient
		m, c := mc[0], mc[1]
		wg, own := winoOwnChunks(g.n, c, m, g.h, g.w)
		chunks := 16 * (wg.vs + wg.ms)
		if own {
			chunks *= workers(wg.chunks())
		}
		most = max(most, u+16*fgemm.PackedALen(m, c)+chunks+rows(&wg))
	}
	wg, own := winoGradChunks(&g)
	grad := u + 16*(wg.vs+wg.ms)
	if own {
		grad *= workers(wg.chunks())
	}
	return 4 * int64(max(most, grad+rows(&wg)))
}

// winoRowsLen is the most values of inputTransform's row buffer for a
// chunk of wg: two rows a tile row the chunk touches (at most ld/tw + 2
// of them) and two more, 2·tw + 16 values each.
func winoRowsLen(wg *winoGeom) int {
	return (2*(wg.ld/wg.tw+2) + 2) * (2*wg.tw + 16)
}

// winoOwnChunks tiles a Winograd pass in chunks of winoBlockTiles and
// reports whether each worker takes whole chunks (enough of them for
// every worker); if not, it returns the tiling whose chunks all workers
// share.
func winoOwnChunks(n, c, m, h, w int) (winoGeom, bool) {
	wg := newWinoGeom(n, c, m, h, w, winoBlockTiles(c, m))
	nw := workers(wg.chunks())
	// At least two chunks a worker: parallelFor hands each worker
	// contiguous whole chunks, so one worker may take a chunk more than
	// another; with two or more each, that costs at most a third of the
	// pass, with one each it would be half. One worker takes these chunks
	// too: the shared chunks (winoChunkElems) outgrow its caches, and on
	// one worker (BenchmarkConvWinograd -cpu 1, CPU time) the 64×96
	// planes of 64 channels took 11–12 cpu-ms a pass in chunks of
	// winoBlockTiles against 13–22 in shared chunks, 128→256 channels on
	// 32×48 19–20 against 24–27; 512×512 channels on 8×12 (12 chunks of
	// 32 tiles, each reading all 16 MB of packed filters) 15–16 against
	// 14–15 forward and input gradient.
	if wg.chunks() >= 2*nw {
		return wg, true
	}
	return winoSharedChunks(n, c, m, h, w), false
}

// winoSharedChunks tiles a Winograd pass in the chunks all workers share:
// about winoChunkElems transformed values each.
func winoSharedChunks(n, c, m, h, w int) winoGeom {
	return newWinoGeom(n, c, m, h, w, max(winoMinTiles, winoChunkElems/(16*(c+m))))
}

// winoGradChunks is the tiling of g's weight gradient and whether each
// worker takes whole chunks into its own dU: winoOwnChunks, when the
// transformed filters (16·xiStride(m·c) values) are at most
// winoOwnGradElems; otherwise the shared chunks.
func winoGradChunks(g *convGeom) (winoGeom, bool) {
	wg, own := winoOwnChunks(g.n, g.c, g.m, g.h, g.w)
	if own && 16*xiStride(g.m*g.c) <= winoOwnGradElems {
		return wg, true
	}
	return winoSharedChunks(g.n, g.c, g.m, g.h, g.w), false
}
