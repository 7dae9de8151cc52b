package onnxops

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// LSTM and GRU (opset 7; 14 adds layout), unrolled over the sequence,
// whose length is fixed when the graph is built, into Gemm, Add, Mul,
// Sigmoid and Tanh, so that their gradients are those ops'. Directions
// forward, reverse and bidirectional; optional bias, initial_h (and
// initial_c and peepholes P for LSTM); GRU's linear_before_reset (PyTorch
// writes 1). Refused by name: activations other than the defaults
// (Sigmoid, Tanh, Tanh), activation_alpha/beta, clip, LSTM's
// input_forget, layout 1, and sequence_lens unless it is a constant
// holding the full length for every sample.

func init() {
	graph.Register("LSTM", 7, lowerLSTM)
	graph.Register("GRU", 7, lowerGRU)
}

// rnn builds one recurrent node's unrolled graph.
type rnn struct {
	b     *graph.Builder
	n     *onnxpb.NodeProto
	k     int // ops made so far (unique names)
	T, B  int // sequence length, batch
	H     int // hidden size
	dirs  []bool
	gates int // 4 (LSTM) or 3 (GRU)
}

// op lowers one op of the unrolled graph on ins, named after the node.
func (r *rnn) op(op string, attrs []*onnxpb.AttributeProto, ins ...*graph.Value) (*graph.Value, error) {
	r.k++
	name := fmt.Sprintf("%s/%s%d", r.n.GetName(), op, r.k)
	nd := &onnxpb.NodeProto{Name: proto.String(name), OpType: proto.String(op), Attribute: attrs, Output: []string{name}}
	for i := range ins {
		nd.Input = append(nd.Input, fmt.Sprintf("%s:%d", name, i))
	}
	outs, err := graph.Lookup(op, r.b.Opset)(r.b, nd, ins)
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

func (r *rnn) add(a, c *graph.Value) (*graph.Value, error) { return r.op("Add", nil, a, c) }
func (r *rnn) mul(a, c *graph.Value) (*graph.Value, error) { return r.op("Mul", nil, a, c) }

// gemmT is a · wᵀ (+ bias).
func (r *rnn) gemmT(a, w, bias *graph.Value) (*graph.Value, error) {
	ins := []*graph.Value{a, w}
	if bias != nil {
		ins = append(ins, bias)
	}
	return r.op("Gemm", []*onnxpb.AttributeProto{aIntAttr("transB", 1)}, ins...)
}

func aIntAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

// piece is x's slice [start, start+size) along axis a, reshaped to shape.
func (r *rnn) piece(x *graph.Value, a, start, size int, shape ...int) (*graph.Value, error) {
	r.k++
	nd := &onnxpb.NodeProto{Name: proto.String(fmt.Sprintf("%s/slice%d", r.n.GetName(), r.k)), OpType: r.n.OpType, Output: []string{fmt.Sprintf("%s/slice%d", r.n.GetName(), r.k)}}
	v, err := splitPiece(r.b, nd, r.n.GetOpType(), x, a, start, size)
	if err != nil || shape == nil {
		return v, err
	}
	out, err := reshapeTo(r.b, nd, v, shape)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// reshape gives x the shape s.
func (r *rnn) reshape(x *graph.Value, s ...int) (*graph.Value, error) {
	r.k++
	nd := &onnxpb.NodeProto{Name: proto.String(fmt.Sprintf("%s/reshape%d", r.n.GetName(), r.k)), OpType: r.n.OpType, Output: []string{fmt.Sprintf("%s/reshape%d", r.n.GetName(), r.k)}}
	out, err := reshapeTo(r.b, nd, x, s)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func (r *rnn) concat(axis int64, vs ...*graph.Value) (*graph.Value, error) {
	if len(vs) == 1 {
		return vs[0], nil
	}
	return r.op("Concat", []*onnxpb.AttributeProto{aIntAttr("axis", axis)}, vs...)
}

// newRNN checks the attributes and inputs common to LSTM and GRU: X
// [T, B, I], W [D, g·H, I], R [D, g·H, H].
func newRNN(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value, gates int, acts []string) (*rnn, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	w, err := graph.Input(n, in, 1)
	if err != nil {
		return nil, err
	}
	rw, err := graph.Input(n, in, 2)
	if err != nil {
		return nil, err
	}
	dir, err := graph.AttrString(n, "direction", "forward")
	if err != nil {
		return nil, err
	}
	r := &rnn{b: b, n: n, gates: gates}
	switch dir {
	case "forward":
		r.dirs = []bool{false}
	case "reverse":
		r.dirs = []bool{true}
	case "bidirectional":
		r.dirs = []bool{false, true}
	default:
		return nil, graph.NodeErr(n, "direction %q: expected forward, reverse or bidirectional", dir)
	}
	if layout, err := graph.AttrInt(n, "layout", 0); err != nil {
		return nil, err
	} else if layout != 0 {
		return nil, graph.NodeErr(n, "layout %d (batch first) is not supported: expected 0, sequence first", layout)
	}
	for _, a := range []string{"activation_alpha", "activation_beta", "clip"} {
		if graph.HasAttr(n, a) {
			return nil, graph.NodeErr(n, "attribute %q is not supported (only the default activations, without clip)", a)
		}
	}
	if got, err := attrStrings(n, "activations"); err != nil {
		return nil, err
	} else if got != nil {
		var want []string
		for range r.dirs {
			want = append(want, acts...)
		}
		if !slices.Equal(got, want) {
			return nil, graph.NodeErr(n, "activations %v are not supported: only the defaults %v", got, want)
		}
	}
	if len(x.Shape) != 3 {
		return nil, graph.NodeErr(n, "input X %q has shape %v, expected [seq_length, batch_size, input_size]", n.Input[0], x.Shape)
	}
	r.T, r.B = x.Shape[0], x.Shape[1]
	D := len(r.dirs)
	if len(rw.Shape) != 3 || rw.Shape[0] != D || rw.Shape[1] != gates*rw.Shape[2] {
		return nil, graph.NodeErr(n, "input R %q has shape %v, expected [%d, %d·hidden_size, hidden_size]", n.Input[2], rw.Shape, D, gates)
	}
	r.H = rw.Shape[2]
	if hs, err := graph.AttrInt(n, "hidden_size", int64(r.H)); err != nil {
		return nil, err
	} else if int(hs) != r.H {
		return nil, graph.NodeErr(n, "hidden_size %d, but R %q has shape %v", hs, n.Input[2], rw.Shape)
	}
	if !slices.Equal(w.Shape, []int{D, gates * r.H, x.Shape[2]}) {
		return nil, graph.NodeErr(n, "input W %q has shape %v, expected %v", n.Input[1], w.Shape, []int{D, gates * r.H, x.Shape[2]})
	}
	if sl := graph.OptInput(in, 4); sl != nil {
		t, err := graph.ConstInput(n, in, 4, "sequence_lens")
		if err != nil {
			return nil, graph.NodeErr(n, "sequence_lens %q is computed at run time: only a constant holding the full length %d for every sample is supported", n.Input[4], r.T)
		}
		for _, v := range t.Int64s() {
			if int(v) != r.T {
				return nil, graph.NodeErr(n, "sequence_lens %v: sequences shorter than seq_length %d are not supported", t.Int64s(), r.T)
			}
		}
	}
	for i, s := range map[int][]int{3: {D, 2 * gates * r.H}, 5: {D, r.B, r.H}, 6: {D, r.B, r.H}, 7: {D, 3 * r.H}} {
		if v := graph.OptInput(in, i); v != nil && i < len(n.Input) && (gates == 4 || i < 6) && !slices.Equal(v.Shape, s) {
			return nil, graph.NodeErr(n, "input %d %q has shape %v, expected %v", i, n.Input[i], v.Shape, s)
		}
	}
	return r, nil
}

// attrStrings returns the strings attribute name of n, or nil if absent.
func attrStrings(n *onnxpb.NodeProto, name string) ([]string, error) {
	a := graph.Attr(n, name)
	if a == nil {
		return nil, nil
	}
	if a.GetType() != onnxpb.AttributeProto_STRINGS {
		return nil, graph.NodeErr(n, "attribute %q: expected strings, got %v", name, a.GetType())
	}
	var out []string
	for _, s := range a.GetStrings() {
		out = append(out, string(s))
	}
	return out, nil
}

// dirInputs are one direction's weights: W and R as [g·H, I] and [g·H,
// H], the biases Wb and Rb as [g·H] (nil without B), the initial states
// [B, H] (nil: zeros) and LSTM's peepholes [3H] (nil: none).
type dirInputs struct {
	w, r, wb, rb, h0, c0, p *graph.Value
}

func (r *rnn) direction(in []*graph.Value, d int) (*dirInputs, error) {
	gH := r.gates * r.H
	var di dirInputs
	var err error
	if di.w, err = r.piece(in[1], 0, d, 1, gH, in[1].Shape[2]); err != nil {
		return nil, err
	}
	if di.r, err = r.piece(in[2], 0, d, 1, gH, r.H); err != nil {
		return nil, err
	}
	if bias := graph.OptInput(in, 3); bias != nil {
		bd, err := r.piece(bias, 0, d, 1, 2*gH)
		if err != nil {
			return nil, err
		}
		if di.wb, err = r.piece(bd, 0, 0, gH); err != nil {
			return nil, err
		}
		if di.rb, err = r.piece(bd, 0, gH, gH); err != nil {
			return nil, err
		}
	}
	if h0 := graph.OptInput(in, 5); h0 != nil {
		if di.h0, err = r.piece(h0, 0, d, 1, r.B, r.H); err != nil {
			return nil, err
		}
	}
	if r.gates == 4 {
		if c0 := graph.OptInput(in, 6); c0 != nil {
			if di.c0, err = r.piece(c0, 0, d, 1, r.B, r.H); err != nil {
				return nil, err
			}
		}
		if p := graph.OptInput(in, 7); p != nil {
			if di.p, err = r.piece(p, 0, d, 1, 3*r.H); err != nil {
				return nil, err
			}
		}
	}
	zeros := func() *graph.Value {
		return graph.ConstValue(&importer.Tensor{Name: r.n.GetName() + "/zeros", Type: importer.Float64, Shape: []int{r.B, r.H}, F64: make([]float64, r.B*r.H)})
	}
	if di.h0 == nil {
		di.h0 = zeros()
	}
	if r.gates == 4 && di.c0 == nil {
		di.c0 = zeros()
	}
	return &di, nil
}

// inputGates is X·Wᵀ (+ bias) for every step at once, [T·B, g·H].
func (r *rnn) inputGates(x *graph.Value, di *dirInputs, bias *graph.Value) (*graph.Value, error) {
	x2, err := r.reshape(x, r.T*r.B, x.Shape[2])
	if err != nil {
		return nil, err
	}
	return r.gemmT(x2, di.w, bias)
}

// gate is gate k ([B, H]) of a [B, g·H] value.
func (r *rnn) gate(v *graph.Value, k int) (*graph.Value, error) { return r.piece(v, 1, k*r.H, r.H) }

// outputs stacks the per-step hidden states of every direction into Y
// [T, D, B, H] and the last ones into Y_h [D, B, H] (and cells into Y_c).
func (r *rnn) outputs(hs [][]*graph.Value, last, lastC []*graph.Value) ([]*graph.Value, error) {
	var dirsY []*graph.Value
	for _, steps := range hs {
		var ys []*graph.Value
		for _, h := range steps {
			y, err := r.reshape(h, 1, 1, r.B, r.H)
			if err != nil {
				return nil, err
			}
			ys = append(ys, y)
		}
		y, err := r.concat(0, ys...)
		if err != nil {
			return nil, err
		}
		dirsY = append(dirsY, y)
	}
	Y, err := r.concat(1, dirsY...)
	if err != nil {
		return nil, err
	}
	stack := func(vs []*graph.Value) (*graph.Value, error) {
		var out []*graph.Value
		for _, v := range vs {
			s, err := r.reshape(v, 1, r.B, r.H)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return r.concat(0, out...)
	}
	Yh, err := stack(last)
	if err != nil {
		return nil, err
	}
	outs := []*graph.Value{Y, Yh}
	if lastC != nil {
		Yc, err := stack(lastC)
		if err != nil {
			return nil, err
		}
		outs = append(outs, Yc)
	}
	return outs, nil
}

// steps is the order of the time steps of a direction.
func (r *rnn) steps(reverse bool) []int {
	ts := make([]int, r.T)
	for i := range ts {
		ts[i] = i
		if reverse {
			ts[i] = r.T - 1 - i
		}
	}
	return ts
}

func lowerLSTM(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	r, err := newRNN(b, n, in, 4, []string{"Sigmoid", "Tanh", "Tanh"})
	if err != nil {
		return nil, err
	}
	if f, err := graph.AttrInt(n, "input_forget", 0); err != nil {
		return nil, err
	} else if f != 0 {
		return nil, graph.NodeErr(n, "input_forget %d (coupled input and forget gates) is not supported", f)
	}
	hs := make([][]*graph.Value, len(r.dirs))
	var last, lastC []*graph.Value
	for d, rev := range r.dirs {
		di, err := r.direction(in, d)
		if err != nil {
			return nil, err
		}
		var bias *graph.Value
		if di.wb != nil {
			if bias, err = r.add(di.wb, di.rb); err != nil {
				return nil, err
			}
		}
		xg, err := r.inputGates(in[0], di, bias)
		if err != nil {
			return nil, err
		}
		var pi, po, pf *graph.Value
		if di.p != nil {
			if pi, err = r.piece(di.p, 0, 0, r.H); err != nil {
				return nil, err
			}
			if po, err = r.piece(di.p, 0, r.H, r.H); err != nil {
				return nil, err
			}
			if pf, err = r.piece(di.p, 0, 2*r.H, r.H); err != nil {
				return nil, err
			}
		}
		h, c := di.h0, di.c0
		hs[d] = make([]*graph.Value, r.T)
		for _, t := range r.steps(rev) {
			xt, err := r.piece(xg, 0, t*r.B, r.B)
			if err != nil {
				return nil, err
			}
			hr, err := r.gemmT(h, di.r, nil)
			if err != nil {
				return nil, err
			}
			g, err := r.add(xt, hr)
			if err != nil {
				return nil, err
			}
			var gs [4]*graph.Value // i, o, f, c
			for k := range gs {
				if gs[k], err = r.gate(g, k); err != nil {
					return nil, err
				}
			}
			peep := func(v, p, cell *graph.Value) (*graph.Value, error) {
				if p == nil {
					return v, nil
				}
				pc, err := r.mul(p, cell)
				if err != nil {
					return nil, err
				}
				return r.add(v, pc)
			}
			if gs[0], err = peep(gs[0], pi, c); err != nil {
				return nil, err
			}
			if gs[2], err = peep(gs[2], pf, c); err != nil {
				return nil, err
			}
			it, err := r.op("Sigmoid", nil, gs[0])
			if err != nil {
				return nil, err
			}
			ft, err := r.op("Sigmoid", nil, gs[2])
			if err != nil {
				return nil, err
			}
			ct, err := r.op("Tanh", nil, gs[3])
			if err != nil {
				return nil, err
			}
			fc, err := r.mul(ft, c)
			if err != nil {
				return nil, err
			}
			ic, err := r.mul(it, ct)
			if err != nil {
				return nil, err
			}
			if c, err = r.add(fc, ic); err != nil {
				return nil, err
			}
			if gs[1], err = peep(gs[1], po, c); err != nil {
				return nil, err
			}
			ot, err := r.op("Sigmoid", nil, gs[1])
			if err != nil {
				return nil, err
			}
			tc, err := r.op("Tanh", nil, c)
			if err != nil {
				return nil, err
			}
			if h, err = r.mul(ot, tc); err != nil {
				return nil, err
			}
			hs[d][t] = h
		}
		last, lastC = append(last, h), append(lastC, c)
	}
	return r.outputs(hs, last, lastC)
}

func lowerGRU(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	r, err := newRNN(b, n, in, 3, []string{"Sigmoid", "Tanh"})
	if err != nil {
		return nil, err
	}
	lbr, err := graph.AttrInt(n, "linear_before_reset", 0)
	if err != nil {
		return nil, err
	}
	one := graph.ConstValue(&importer.Tensor{Name: n.GetName() + "/one", Type: importer.Float64, Shape: []int{}, F64: []float64{1}})
	hs := make([][]*graph.Value, len(r.dirs))
	var last []*graph.Value
	for d, rev := range r.dirs {
		di, err := r.direction(in, d)
		if err != nil {
			return nil, err
		}
		// Input gates with Wb, plus Rb for z and r; h's Rb stays apart
		// when it is added before the reset gate multiplies.
		var xbias, rbh *graph.Value
		if di.wb != nil {
			rbzr, err := r.piece(di.rb, 0, 0, 2*r.H)
			if err != nil {
				return nil, err
			}
			if rbh, err = r.piece(di.rb, 0, 2*r.H, r.H); err != nil {
				return nil, err
			}
			zero := graph.ConstValue(&importer.Tensor{Name: n.GetName() + "/zero", Type: importer.Float64, Shape: []int{r.H}, F64: make([]float64, r.H)})
			rb, err := r.concat(0, rbzr, zero)
			if err != nil {
				return nil, err
			}
			if xbias, err = r.add(di.wb, rb); err != nil {
				return nil, err
			}
		}
		xg, err := r.inputGates(in[0], di, xbias)
		if err != nil {
			return nil, err
		}
		rzr, err := r.piece(di.r, 0, 0, 2*r.H)
		if err != nil {
			return nil, err
		}
		rh, err := r.piece(di.r, 0, 2*r.H, r.H)
		if err != nil {
			return nil, err
		}
		h := di.h0
		hs[d] = make([]*graph.Value, r.T)
		for _, t := range r.steps(rev) {
			xt, err := r.piece(xg, 0, t*r.B, r.B)
			if err != nil {
				return nil, err
			}
			xzr, err := r.piece(xt, 1, 0, 2*r.H)
			if err != nil {
				return nil, err
			}
			xh, err := r.gate(xt, 2)
			if err != nil {
				return nil, err
			}
			hzr, err := r.gemmT(h, rzr, nil)
			if err != nil {
				return nil, err
			}
			zr, err := r.add(xzr, hzr)
			if err != nil {
				return nil, err
			}
			zr, err = r.op("Sigmoid", nil, zr)
			if err != nil {
				return nil, err
			}
			zt, err := r.gate(zr, 0)
			if err != nil {
				return nil, err
			}
			rt, err := r.gate(zr, 1)
			if err != nil {
				return nil, err
			}
			var hh *graph.Value
			if lbr != 0 {
				if hh, err = r.gemmT(h, rh, rbh); err != nil {
					return nil, err
				}
				if hh, err = r.mul(rt, hh); err != nil {
					return nil, err
				}
			} else {
				rh0, err := r.mul(rt, h)
				if err != nil {
					return nil, err
				}
				if hh, err = r.gemmT(rh0, rh, rbh); err != nil {
					return nil, err
				}
			}
			if hh, err = r.add(xh, hh); err != nil {
				return nil, err
			}
			ht, err := r.op("Tanh", nil, hh)
			if err != nil {
				return nil, err
			}
			// H = (1 − z)·h̃ + z·H₋₁
			omz, err := r.op("Sub", nil, one, zt)
			if err != nil {
				return nil, err
			}
			a, err := r.mul(omz, ht)
			if err != nil {
				return nil, err
			}
			zh, err := r.mul(zt, h)
			if err != nil {
				return nil, err
			}
			if h, err = r.add(a, zh); err != nil {
				return nil, err
			}
			hs[d][t] = h
		}
		last = append(last, h)
	}
	return r.outputs(hs, last, nil)
}
