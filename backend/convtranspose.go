package backend

import (
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// ConvTranspose (opsets 1 and 11 share one signature), 1-D and 2-D: X
// [N, C, (H,) W], W [C, M/group, (kH,) kW], optional B [M]; attributes
// strides, pads, dilations, group, output_padding, output_shape and
// auto_pad, as the ONNX spec defines them. Every input x[n, c, i, j]
// scatters x·W[c, m, ki, kj] to y[n, m, i·s − p + ki·d, j·s − p + kj·d];
// the gradients gather the same terms back. A direct Go kernel: correct
// for every attribute combination, not tuned for speed.

func init() {
	register("ConvTranspose", 1, lowerConvTranspose)
}

// convTParams are the resolved geometry of a 2-D ConvTranspose (1-D is
// 2-D with H = kH = 1).
type convTParams struct {
	n, c, h, w      int // input
	m, kh, kw, g    int // output channels, kernel, groups
	oh, ow          int // output
	sh, sw, dh, dw  int
	pt, pl          int // leading pads
	cPerG, mPerG    int
	hasBias, oneDim bool
}

func lowerConvTranspose(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	w, err := input(n, in, 1)
	if err != nil {
		return nil, err
	}
	bv := optInput(in, 2)
	r := len(x.shape)
	if r != 3 && r != 4 {
		return nil, b.limitErr(n, "input of rank %d (only 1-D and 2-D ConvTranspose, rank 3 or 4)", r)
	}
	if len(w.shape) != r {
		return nil, nodeErr(n, "W has shape %v, expected rank %d like X %v", w.shape, r, x.shape)
	}
	sp := r - 2
	get := func(name string, def int64) ([]int, error) {
		v, err := attrInts(n, name, nil)
		if err != nil {
			return nil, err
		}
		if v == nil {
			out := make([]int, sp)
			for i := range out {
				out[i] = int(def)
			}
			return out, nil
		}
		return ints(v), nil
	}
	strides, err := get("strides", 1)
	if err != nil {
		return nil, err
	}
	dil, err := get("dilations", 1)
	if err != nil {
		return nil, err
	}
	opad, err := get("output_padding", 0)
	if err != nil {
		return nil, err
	}
	pads, err := attrInts(n, "pads", nil)
	if err != nil {
		return nil, err
	}
	oshape, err := attrInts(n, "output_shape", nil)
	if err != nil {
		return nil, err
	}
	autoPad, err := attrString(n, "auto_pad", "NOTSET")
	if err != nil {
		return nil, err
	}
	group, err := attrInt(n, "group", 1)
	if err != nil {
		return nil, err
	}
	if len(strides) != sp || len(dil) != sp || len(opad) != sp {
		return nil, nodeErr(n, "strides %v, dilations %v, output_padding %v: expected %d values each", strides, dil, opad, sp)
	}
	if k, err := attrInts(n, "kernel_shape", nil); err != nil {
		return nil, err
	} else if k != nil {
		for i, kv := range k {
			if i >= sp || int(kv) != w.shape[2+i] {
				return nil, nodeErr(n, "kernel_shape %v does not match W of shape %v", k, w.shape)
			}
		}
	}
	g := int(group)
	if g < 1 || x.shape[1] != w.shape[0] || x.shape[1]%g != 0 {
		return nil, nodeErr(n, "X %v, W %v, group %d: expected W[0] = C divisible by group", x.shape, w.shape, g)
	}
	m := w.shape[1] * g
	if bv != nil && (len(bv.shape) != 1 || bv.shape[0] != m) {
		return nil, nodeErr(n, "B has shape %v, expected [%d]", bv.shape, m)
	}
	// Resolve pads (begin..., end...) and the output size per axis.
	begin, end := make([]int, sp), make([]int, sp)
	out := make([]int, sp)
	for i := 0; i < sp; i++ {
		in, k := x.shape[2+i], (w.shape[2+i]-1)*dil[i]+1
		full := strides[i]*(in-1) + opad[i] + k
		switch {
		case oshape != nil:
			if len(oshape) != sp {
				return nil, nodeErr(n, "output_shape %v: expected %d values", oshape, sp)
			}
			// A negative total (output_shape beyond the full output)
			// pads the output with zeros, as output_padding would; the
			// halves round toward −∞ as in the ONNX reference.
			total := full - int(oshape[len(oshape)-sp+i])
			half := floorDiv2(total)
			if autoPad == "SAME_UPPER" {
				begin[i], end[i] = half, total-half
			} else {
				begin[i], end[i] = total-half, half
			}
		case autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER":
			total := max(0, full-in*strides[i])
			if autoPad == "SAME_UPPER" {
				begin[i], end[i] = total/2, total-total/2
			} else {
				begin[i], end[i] = total-total/2, total/2
			}
		case autoPad == "VALID":
		case autoPad == "NOTSET":
			if pads != nil {
				if len(pads) != 2*sp {
					return nil, nodeErr(n, "pads %v: expected %d values", pads, 2*sp)
				}
				begin[i], end[i] = int(pads[i]), int(pads[sp+i])
			}
		default:
			return nil, nodeErr(n, "auto_pad %q: expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", autoPad)
		}
		out[i] = full - begin[i] - end[i]
		if out[i] < 1 {
			return nil, nodeErr(n, "output size %d on spatial axis %d (input %v, W %v, pads %v %v)", out[i], i, x.shape, w.shape, begin, end)
		}
	}
	p := convTParams{n: x.shape[0], c: x.shape[1], m: m, g: g, cPerG: x.shape[1] / g, mPerG: w.shape[1],
		h: 1, kh: 1, oh: 1, sh: 1, dh: 1, hasBias: bv != nil, oneDim: sp == 1}
	if sp == 2 {
		p.h, p.kh, p.oh, p.sh, p.dh, p.pt = x.shape[2], w.shape[2], out[0], strides[0], dil[0], begin[0]
	}
	p.w, p.kw, p.ow, p.sw, p.dw, p.pl = x.shape[r-1], w.shape[r-1], out[sp-1], strides[sp-1], dil[sp-1], begin[sp-1]
	yShape := append([]int{p.n, m}, out...)
	nodes := []gnode{b.node(x), b.node(w)}
	if bv != nil {
		nodes = append(nodes, b.node(bv))
	}
	y, err := b.kernel(n.GetName(), "ConvTranspose", nodes, yShape, p.forward, p.backward, nil)
	if err != nil {
		return nil, err
	}
	return []*value{nodeValue(y)}, nil
}

// each calls f(xi, wi, yi) for every input element, kernel tap and output
// element it reaches: y[yi] += x[xi]·W[wi].
func (p *convTParams) each(f func(xi, wi, yi int)) {
	for b := 0; b < p.n; b++ {
		for g := 0; g < p.g; g++ {
			for ci := 0; ci < p.cPerG; ci++ {
				c := g*p.cPerG + ci
				xPlane := (b*p.c + c) * p.h * p.w
				for mi := 0; mi < p.mPerG; mi++ {
					mo := g*p.mPerG + mi
					yPlane := (b*p.m + mo) * p.oh * p.ow
					wBase := (c*p.mPerG + mi) * p.kh * p.kw
					for kh := 0; kh < p.kh; kh++ {
						for i := 0; i < p.h; i++ {
							oh := i*p.sh - p.pt + kh*p.dh
							if oh < 0 || oh >= p.oh {
								continue
							}
							for kw := 0; kw < p.kw; kw++ {
								wi := wBase + kh*p.kw + kw
								for j := 0; j < p.w; j++ {
									ow := j*p.sw - p.pl + kw*p.dw
									if ow < 0 || ow >= p.ow {
										continue
									}
									f(xPlane+i*p.w+j, wi, yPlane+oh*p.ow+ow)
								}
							}
						}
					}
				}
			}
		}
	}
}

func (p *convTParams) forward(dst []float64, in [][]float64) {
	x, w := in[0], in[1]
	if p.hasBias {
		plane := p.oh * p.ow
		for b := 0; b < p.n; b++ {
			for mo := 0; mo < p.m; mo++ {
				v := in[2][mo]
				o := (b*p.m + mo) * plane
				for k := o; k < o+plane; k++ {
					dst[k] = v
				}
			}
		}
	}
	p.each(func(xi, wi, yi int) { dst[yi] += x[xi] * w[wi] })
}

func (p *convTParams) backward(k int, dst []float64, in [][]float64, _, gy []float64) {
	x, w := in[0], in[1]
	switch k {
	case 0:
		p.each(func(xi, wi, yi int) { dst[xi] += gy[yi] * w[wi] })
	case 1:
		p.each(func(xi, wi, yi int) { dst[wi] += gy[yi] * x[xi] })
	case 2:
		plane := p.oh * p.ow
		for b := 0; b < p.n; b++ {
			for mo := 0; mo < p.m; mo++ {
				o := (b*p.m + mo) * plane
				for _, v := range gy[o : o+plane] {
					dst[mo] += v
				}
			}
		}
	}
}

// floorDiv2 returns ⌊v/2⌋ (Python's v // 2).
func floorDiv2(v int) int {
	if v < 0 {
		return -((-v + 1) / 2)
	}
	return v / 2
}
