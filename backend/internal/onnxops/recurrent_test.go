package onnxops

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// rnnCase is one LSTM or GRU node: direction, which optional inputs it
// has, GRU's linear_before_reset.
type rnnCase struct {
	op, dir           string
	bias, init, peep  bool
	lbr               int64
	T, B, I, H, gates int
}

func (c rnnCase) name() string {
	return fmt.Sprintf("%s %s bias=%v init=%v peep=%v lbr=%d", c.op, c.dir, c.bias, c.init, c.peep, c.lbr)
}

func (c rnnCase) dirs() int {
	if c.dir == "bidirectional" {
		return 2
	}
	return 1
}

// tensors returns the case's W, R and optional inputs (float32, random),
// in input order: W, R, B, sequence_lens (absent), initial_h,
// initial_c, P; nil where absent.
func (c rnnCase) tensors(r *rand.Rand, prefix string) []*importer.Tensor {
	D, gH := c.dirs(), c.gates*c.H
	ts := []*importer.Tensor{onnxtest.RandUniform32(r, prefix+"W", D, gH, c.I), onnxtest.RandUniform32(r, prefix+"R", D, gH, c.H), nil, nil, nil, nil, nil}
	if c.bias {
		ts[2] = onnxtest.RandUniform32(r, prefix+"B", D, 2*gH)
	}
	if c.init {
		ts[4] = onnxtest.RandUniform32(r, prefix+"h0", D, c.B, c.H)
		if c.op == "LSTM" {
			ts[5] = onnxtest.RandUniform32(r, prefix+"c0", D, c.B, c.H)
		}
	}
	if c.peep {
		ts[6] = onnxtest.RandUniform32(r, prefix+"P", D, 3*c.H)
	}
	if c.op == "GRU" {
		ts = ts[:5]
	}
	for len(ts) > 0 && ts[len(ts)-1] == nil {
		ts = ts[:len(ts)-1]
	}
	return ts
}

func (c rnnCase) attrs() []*onnxpb.AttributeProto {
	a := []*onnxpb.AttributeProto{onnxtest.AString("direction", c.dir), onnxtest.AInt("hidden_size", int64(c.H))}
	if c.op == "GRU" {
		a = append(a, onnxtest.AInt("linear_before_reset", c.lbr))
	}
	return a
}

func rnnCases() []rnnCase {
	var cs []rnnCase
	for _, dir := range []string{"forward", "reverse", "bidirectional"} {
		cs = append(cs,
			rnnCase{op: "LSTM", dir: dir, T: 4, B: 2, I: 3, H: 5, gates: 4},
			rnnCase{op: "LSTM", dir: dir, bias: true, init: true, peep: true, T: 3, B: 2, I: 3, H: 4, gates: 4},
			rnnCase{op: "GRU", dir: dir, T: 4, B: 2, I: 3, H: 5, gates: 3},
			rnnCase{op: "GRU", dir: dir, bias: true, init: true, lbr: 1, T: 3, B: 3, I: 2, H: 4, gates: 3},
			rnnCase{op: "GRU", dir: dir, bias: true, init: true, lbr: 0, T: 3, B: 2, I: 3, H: 4, gates: 3},
		)
	}
	return cs
}

// TestRecurrentORT checks LSTM and GRU (every direction, with and
// without bias, initial states and peepholes, GRU's linear_before_reset
// 0 and 1) against ONNX Runtime: Y, Y_h and Y_c.
func TestRecurrentORT(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	var nodes []*onnxpb.NodeProto
	var inits []*importer.Tensor
	var outs []string
	inputs := map[string][]int64{}
	feeds := map[string]*importer.Tensor{}
	for i, c := range rnnCases() {
		p := fmt.Sprintf("c%d_", i)
		x := onnxtest.RandUniform32(r, p+"x", c.T, c.B, c.I)
		inputs[x.Name], feeds[x.Name] = []int64{int64(c.T), int64(c.B), int64(c.I)}, x
		ins := []string{x.Name}
		for _, tt := range c.tensors(r, p) {
			if tt == nil {
				ins = append(ins, "")
				continue
			}
			ins = append(ins, tt.Name)
			inits = append(inits, tt)
		}
		o := []string{p + "Y", p + "Y_h"}
		if c.op == "LSTM" {
			o = append(o, p+"Y_c")
		}
		outs = append(outs, o...)
		nodes = append(nodes, onnxtest.Node(c.op, c.name(), ins, o, c.attrs()...))
	}
	m := onnxtest.GraphModel(nodes, inits, inputs, outs...)
	checkGraphORT(t, m, 14, feeds, 1e-5)
}

// TestRecurrentGrad checks the gradients of Y with respect to X, W, R, B,
// the initial states and the peepholes by central differences, for
// LSTM and GRU in both directions at once.
func TestRecurrentGrad(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for _, c := range []rnnCase{
		{op: "LSTM", dir: "bidirectional", bias: true, init: true, peep: true, T: 3, B: 2, I: 2, H: 3, gates: 4},
		{op: "GRU", dir: "bidirectional", bias: true, init: true, lbr: 1, T: 3, B: 2, I: 2, H: 3, gates: 3},
		{op: "GRU", dir: "reverse", bias: true, init: true, lbr: 0, T: 3, B: 2, I: 2, H: 3, gates: 3},
	} {
		t.Run(c.name(), func(t *testing.T) {
			x := onnxtest.RandFeed("x", 3, c.T, c.B, c.I)
			ins := []onnxtest.In{x}
			var wrt []string
			for _, tt := range c.tensors(r, "") {
				if tt == nil {
					ins = append(ins, onnxtest.Absent)
					continue
				}
				ins = append(ins, onnxtest.InitF(tt.Name, tt.Shape, tt.Float64s()...))
				wrt = append(wrt, tt.Name)
			}
			m := onnxtest.OneNode(c.op, 14, c.attrs(), ins, "Y", "Y_h")
			for _, w := range append([]string{"x"}, wrt...) {
				gradCheck(t, m, onnxtest.Feeds(ins), w, 1e-6)
			}
		})
	}
}

// TestRecurrentRefused checks that what is not supported is refused by
// name: other activations, clip, input_forget, layout 1, shorter
// sequences.
func TestRecurrentRefused(t *testing.T) {
	c := rnnCase{op: "LSTM", dir: "forward", T: 3, B: 2, I: 2, H: 3, gates: 4}
	r := rand.New(rand.NewSource(1))
	base := func() []onnxtest.In {
		ins := []onnxtest.In{onnxtest.RandFeed("x", 1, c.T, c.B, c.I)}
		for _, tt := range c.tensors(r, "") {
			ins = append(ins, onnxtest.InitF(tt.Name, tt.Shape, tt.Float64s()...))
		}
		return ins
	}
	acts := &onnxpb.AttributeProto{Name: strPtr("activations"), Type: onnxpb.AttributeProto_STRINGS.Enum(), Strings: [][]byte{[]byte("Relu"), []byte("Tanh"), []byte("Tanh")}}
	cases := []struct {
		name  string
		attrs []*onnxpb.AttributeProto
		extra []onnxtest.In
		want  string
	}{
		{"activations", []*onnxpb.AttributeProto{acts}, nil, "activations [Relu Tanh Tanh] are not supported"},
		{"clip", []*onnxpb.AttributeProto{onnxtest.AFloat("clip", 3)}, nil, `attribute "clip" is not supported`},
		{"input_forget", []*onnxpb.AttributeProto{onnxtest.AInt("input_forget", 1)}, nil, "input_forget 1"},
		{"layout", []*onnxpb.AttributeProto{onnxtest.AInt("layout", 1)}, nil, "layout 1 (batch first) is not supported"},
		{"sequence_lens", nil, []onnxtest.In{onnxtest.Absent, onnxtest.InitI("lens", []int{2}, 3, 2)}, "sequences shorter than seq_length 3 are not supported"},
	}
	for _, k := range cases {
		t.Run(k.name, func(t *testing.T) {
			ins := append(base(), k.extra...)
			_, err := tryGraph(onnxtest.OneNode("LSTM", 14, append(c.attrs(), k.attrs...), ins, "Y"), onnxtest.Feeds(ins), nil)
			if err == nil || !onnxtest.ContainsAll(err.Error(), `node "n0" (LSTM)`, k.want) {
				t.Errorf("got %v, want an error naming the node and %q", err, k.want)
			}
		})
	}
	// the full length for every sample is accepted
	ins := append(base(), onnxtest.Absent, onnxtest.InitI("lens", []int{2}, 3, 3))
	if _, err := tryGraph(onnxtest.OneNode("LSTM", 14, c.attrs(), ins, "Y"), onnxtest.Feeds(ins), nil); err != nil {
		t.Errorf("full sequence_lens: %v", err)
	}
}

func strPtr(s string) *string { return &s }
