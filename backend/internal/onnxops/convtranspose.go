package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
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
	graph.Register("ConvTranspose", 1, lowerConvTranspose)
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

func lowerConvTranspose(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	w, err := graph.Input(n, in, 1)
	if err != nil {
		return nil, err
	}
	bv := graph.OptInput(in, 2)
	r := len(x.Shape)
	if r != 3 && r != 4 {
		return nil, b.LimitErr(n, "input of rank %d (only 1-D and 2-D ConvTranspose, rank 3 or 4)", r)
	}
	if len(w.Shape) != r {
		return nil, graph.NodeErr(n, "W has shape %v, expected rank %d like X %v", w.Shape, r, x.Shape)
	}
	sp := r - 2
	get := func(name string, def int64) ([]int, error) {
		v, err := graph.AttrInts(n, name, nil)
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
		return graph.Ints(v), nil
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
	pads, err := graph.AttrInts(n, "pads", nil)
	if err != nil {
		return nil, err
	}
	oshape, err := graph.AttrInts(n, "output_shape", nil)
	if err != nil {
		return nil, err
	}
	autoPad, err := graph.AttrString(n, "auto_pad", "NOTSET")
	if err != nil {
		return nil, err
	}
	group, err := graph.AttrInt(n, "group", 1)
	if err != nil {
		return nil, err
	}
	if len(strides) != sp || len(dil) != sp || len(opad) != sp {
		return nil, graph.NodeErr(n, "strides %v, dilations %v, output_padding %v: expected %d values each", strides, dil, opad, sp)
	}
	if k, err := graph.AttrInts(n, "kernel_shape", nil); err != nil {
		return nil, err
	} else if k != nil {
		for i, kv := range k {
			if i >= sp || int(kv) != w.Shape[2+i] {
				return nil, graph.NodeErr(n, "kernel_shape %v does not match W of shape %v", k, w.Shape)
			}
		}
	}
	g := int(group)
	if g < 1 || x.Shape[1] != w.Shape[0] || x.Shape[1]%g != 0 {
		return nil, graph.NodeErr(n, "X %v, W %v, group %d: expected W[0] = C divisible by group", x.Shape, w.Shape, g)
	}
	m := w.Shape[1] * g
	if bv != nil && (len(bv.Shape) != 1 || bv.Shape[0] != m) {
		return nil, graph.NodeErr(n, "B has shape %v, expected [%d]", bv.Shape, m)
	}
	// Resolve pads (begin..., end...) and the output size per axis.
	begin, end := make([]int, sp), make([]int, sp)
	out := make([]int, sp)
	for i := 0; i < sp; i++ {
		in, k := x.Shape[2+i], (w.Shape[2+i]-1)*dil[i]+1
		full := strides[i]*(in-1) + opad[i] + k
		switch {
		case oshape != nil:
			if len(oshape) != sp {
				return nil, graph.NodeErr(n, "output_shape %v: expected %d values", oshape, sp)
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
					return nil, graph.NodeErr(n, "pads %v: expected %d values", pads, 2*sp)
				}
				begin[i], end[i] = int(pads[i]), int(pads[sp+i])
			}
		default:
			return nil, graph.NodeErr(n, "auto_pad %q: expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", autoPad)
		}
		out[i] = full - begin[i] - end[i]
		if out[i] < 1 {
			return nil, graph.NodeErr(n, "output size %d on spatial axis %d (input %v, W %v, pads %v %v)", out[i], i, x.Shape, w.Shape, begin, end)
		}
	}
	p := convTParams{n: x.Shape[0], c: x.Shape[1], m: m, g: g, cPerG: x.Shape[1] / g, mPerG: w.Shape[1],
		h: 1, kh: 1, oh: 1, sh: 1, dh: 1, hasBias: bv != nil, oneDim: sp == 1}
	if sp == 2 {
		p.h, p.kh, p.oh, p.sh, p.dh, p.pt = x.Shape[2], w.Shape[2], out[0], strides[0], dil[0], begin[0]
	}
	p.w, p.kw, p.ow, p.sw, p.dw, p.pl = x.Shape[r-1], w.Shape[r-1], out[sp-1], strides[sp-1], dil[sp-1], begin[sp-1]
	yShape := append([]int{p.n, m}, out...)
	nodes := []graph.Node{b.Node(x), b.Node(w)}
	if bv != nil {
		nodes = append(nodes, b.Node(bv))
	}
	y, err := b.Kernel(n.GetName(), "ConvTranspose", nodes, yShape, p.forward, p.backward, nil)
	if err != nil {
		return nil, err
	}
	// every input element times every tap of its group's filters, the
	// taps that land outside the output counted too, in every pass; the
	// bias's gradient is a sum
	y.Op().(*graph.KernelOp).FLOPs = func(k int) int64 {
		if k > 1 {
			return 0
		}
		return 2 * int64(p.n) * int64(p.c) * int64(p.mPerG) * int64(p.kh) * int64(p.kw) * int64(p.h) * int64(p.w)
	}
	return []*graph.Value{graph.NodeValue(y)}, nil
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
