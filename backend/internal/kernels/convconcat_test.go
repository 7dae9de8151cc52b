package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// concatChannels concatenates 4-D tensors along axis 1 on the host (the
// reference input of the unfused Conv).
func concatChannels(parts []*tensor.Dense) *tensor.Dense {
	s := parts[0].Shape()
	n, hw, c := s[0], s[2]*s[3], 0
	for _, p := range parts {
		c += p.Shape()[1]
	}
	out := make([]float64, 0, n*c*hw)
	for i := 0; i < n; i++ {
		for _, p := range parts {
			ci := p.Shape()[1]
			out = append(out, p.Data().([]float64)[i*ci*hw:(i+1)*ci*hw]...)
		}
	}
	return tensor.New(tensor.WithShape(n, c, s[2], s[3]), tensor.WithBacking(out))
}

var convConcatCases = []struct {
	name  string
	parts [][]int
	m     int
	bias  bool
}{
	{"two", [][]int{{2, 3, 4, 5}, {2, 5, 4, 5}}, 6, true},
	{"three_no_bias", [][]int{{3, 1, 2, 3}, {3, 2, 2, 3}, {3, 4, 2, 3}}, 4, false},
	{"one", [][]int{{1, 3, 3, 3}}, 2, true},
}

// TestConvConcatGradFD checks ConvConcat's gradients with respect to every
// part, the weights and the bias against central differences (float64),
// and its float32 forward pass against float64.
func TestConvConcatGradFD(t *testing.T) {
	for _, c := range convConcatCases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(2))
			k := len(c.parts)
			vals, ch := randParts(rng, c.parts)
			vals = append(vals, randTensor(rng, c.m, ch, 1, 1), nil)
			diff := make([]bool, k+2)
			for i := range k + 1 {
				diff[i] = true
			}
			if c.bias {
				vals[k+1], diff[k+1] = randTensor(rng, c.m), true
			}
			b := func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				return ConvConcat(in[:k], in[k], in[k+1], ConvParams{})
			}
			noteFD(gradCheck(t, vals, diff, b))
			checkF32(t, vals, b)
		})
	}
}

// TestConvConcatMatchesConv checks ConvConcat's output and gradients
// against Conv of the concatenated input (its input gradient cut into the
// parts'), to float64 round-off.
func TestConvConcatMatchesConv(t *testing.T) {
	for _, c := range convConcatCases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(4))
			k := len(c.parts)
			parts, ch := randParts(rng, c.parts)
			w := randTensor(rng, c.m, ch, 1, 1)
			var bias *tensor.Dense
			if c.bias {
				bias = randTensor(rng, c.m)
			}
			fused := append(append([]*tensor.Dense{}, parts...), w, bias)
			plain := []*tensor.Dense{concatChannels(parts), w, bias}
			bf := func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				return ConvConcat(in[:k], in[k], in[k+1], ConvParams{})
			}
			bp := func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Conv(in[0], in[1], in[2], ConvParams{}) }
			yf, yp := forward(t, fused, bf).Data().([]float64), forward(t, plain, bp).Data().([]float64)
			closeAll(t, "output", yf, yp)
			r := randTensor(rand.New(rand.NewSource(5)), len(yp)).Data().([]float64)
			gf, inf, _, lf := lossGraph(t, fused, bf, r)
			gp, inp, _, lp := lossGraph(t, plain, bp, r)
			wrtF := append(gorgonia.Nodes{}, inf[:k+1]...)
			wrtP := gorgonia.Nodes{inp[0], inp[1]}
			if c.bias {
				wrtF, wrtP = append(wrtF, inf[k+1]), append(wrtP, inp[2])
			}
			df, dp := gradValues(t, gf, lf, wrtF), gradValues(t, gp, lp, wrtP)
			dxCut := splitChannels(dp[0], c.parts)
			for i := range k {
				closeAll(t, fmt.Sprintf("gradient of part %d", i), df[i], dxCut[i])
			}
			closeAll(t, "weight gradient", df[k], dp[1])
			if c.bias {
				closeAll(t, "bias gradient", df[k+1], dp[2])
			}
		})
	}
}

// randParts draws a tensor of each shape in parts and returns them with
// their channels in all.
func randParts(rng *rand.Rand, parts [][]int) ([]*tensor.Dense, int) {
	var out []*tensor.Dense
	ch := 0
	for _, s := range parts {
		out = append(out, randTensor(rng, s...))
		ch += s[1]
	}
	return out, ch
}

// splitChannels cuts the gradient of a concatenation (NCHW) into the
// parts' of shapes parts.
func splitChannels(d []float64, parts [][]int) [][]float64 {
	n, hw, c := parts[0][0], parts[0][2]*parts[0][3], 0
	for _, s := range parts {
		c += s[1]
	}
	out := make([][]float64, len(parts))
	for i := 0; i < n; i++ {
		c0 := 0
		for j, s := range parts {
			out[j] = append(out[j], d[(i*c+c0)*hw:(i*c+c0+s[1])*hw]...)
			c0 += s[1]
		}
	}
	return out
}

func closeAll(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %v, the unfused Conv gives %v", what, i, got[i], want[i])
		}
	}
}

// TestConvConcatDirtyBuffers checks that ConvConcat's forward pass and
// its parts' gradients write every element of a NaN-filled buffer.
func TestConvConcatDirtyBuffers(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	parts := []*tensor.Dense{toF32(randTensor(rng, 2, 3, 4, 4)), toF32(randTensor(rng, 2, 2, 4, 4))}
	w := toF32(randTensor(rng, 5, 5, 1, 1))
	gy := toF32(randTensor(rng, 2, 5, 4, 4))
	g := gorgonia.NewGraph()
	var xs gorgonia.Nodes
	for i, p := range parts {
		xs = append(xs, gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(p.Shape()...), gorgonia.WithName(inName(i))))
	}
	wn := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(5, 5, 1, 1), gorgonia.WithName("w"))
	y, err := ConvConcat(xs, wn, nil, ConvParams{})
	if err != nil {
		t.Fatal(err)
	}
	gyn := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(2, 5, 4, 4), gorgonia.WithName("gy"))
	grads, err := y.Op().(*fnOp).SymDiff(append(xs, wn), y, gyn)
	if err != nil {
		t.Fatal(err)
	}
	nan := func(n int) []float32 {
		d := make([]float32, n)
		for i := range d {
			d[i] = float32(math.NaN())
		}
		return d
	}
	run := func(op *fnOp, buf any, vals ...gorgonia.Value) []float32 {
		v, _, err := op.DoInto(buf, vals...)
		if err != nil {
			t.Fatal(err)
		}
		return v.(tensor.Tensor).Data().([]float32)
	}
	check := func(what string, got, want []float32) {
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s[%d] = %v into a dirty buffer, %v into a fresh one", what, i, got[i], want[i])
			}
		}
	}
	fwd := y.Op().(*fnOp)
	check("output", run(fwd, nan(2*5*16), parts[0], parts[1], w), run(fwd, nil, parts[0], parts[1], w))
	for i := range parts {
		op := grads[i].Op().(*fnOp)
		n := parts[i].Shape().TotalSize()
		check(fmt.Sprintf("gradient of part %d", i), run(op, nan(n), w, gy), run(op, nil, w, gy))
	}
}

// TestConvConcatErrors checks that ConvConcat refuses what it does not
// run: a convolution that is not pointwise, parts of other planes.
func TestConvConcatErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	a := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 2, 5, 5), gorgonia.WithName("a"))
	b := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 3, 5, 5), gorgonia.WithName("b"))
	c := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 3, 4, 5), gorgonia.WithName("c"))
	w1 := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 5, 1, 1), gorgonia.WithName("w1"))
	w3 := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 5, 3, 3), gorgonia.WithName("w3"))
	for _, tc := range []struct {
		name string
		xs   gorgonia.Nodes
		w    *gorgonia.Node
		p    ConvParams
	}{
		{"3x3", gorgonia.Nodes{a, b}, w3, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"strided", gorgonia.Nodes{a, b}, w1, ConvParams{Strides: []int{2, 2}}},
		{"other plane", gorgonia.Nodes{a, c}, w1, ConvParams{}},
		{"channels", gorgonia.Nodes{a, a}, w1, ConvParams{}},
	} {
		if _, err := ConvConcat(tc.xs, tc.w, nil, tc.p); err == nil {
			t.Errorf("%s: expected an error", tc.name)
		}
	}
}
