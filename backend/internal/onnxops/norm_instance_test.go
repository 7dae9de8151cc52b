package onnxops

import (
	"math"
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestInstanceNormalization(t *testing.T) {
	// N=1, C=2, spatial 3: channel 0 = [1, 2, 3], channel 1 = [0, 0, 6].
	ins := []onnxtest.In{onnxtest.Feed("x", []int{1, 2, 3}, 1, 2, 3, 0, 0, 6), onnxtest.InitF("s", []int{2}, 2, 0.5), onnxtest.InitF("b", []int{2}, 0.1, -1)}
	const eps = 1e-5
	i0 := 1 / math.Sqrt(2.0/3+eps) // channel 0: mean 2, var 2/3
	i1 := 1 / math.Sqrt(8+eps)     // channel 1: mean 2, var 8
	want := []float64{2*-1*i0 + 0.1, 0.1, 2*i0 + 0.1, 0.5*-2*i1 - 1, 0.5*-2*i1 - 1, 0.5*4*i1 - 1}
	onnxtest.AssertClose(t, "InstanceNormalization", runOne(t, "InstanceNormalization", 6, nil, ins), []int{1, 2, 3}, want, 1e-12)
	ins[0] = onnxtest.RandFeed("x", 3, 2, 3, 2, 2)
	ins[1], ins[2] = onnxtest.InitF("s", []int{3}, 0.7, -1.2, 1.5), onnxtest.InitF("b", []int{3}, 0.2, 0.3, -0.4)
	m := onnxtest.OneNode("InstanceNormalization", 6, nil, ins, "y")
	for _, wrt := range []string{"x", "s", "b"} {
		gradCheck(t, m, onnxtest.Feeds(ins), wrt, 1e-5)
	}
}

func TestDepthToSpace(t *testing.T) {
	// x: N=1, C=4, H=1, W=2, values 0..7 (channel-major).
	x := []float64{0, 1, 2, 3, 4, 5, 6, 7}
	cases := []struct {
		mode string
		want []float64 // shape [1, 1, 2, 4]
	}{
		// DCR: out[0, 0, i, w·2+j] = x[(i·2+j), w]
		{"DCR", []float64{0, 2, 1, 3, 4, 6, 5, 7}},
		// CRD with one output channel is the same order
		{"CRD", []float64{0, 2, 1, 3, 4, 6, 5, 7}},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("x", []int{1, 4, 1, 2}, x...)}
			attrs := []*onnxpb.AttributeProto{onnxtest.AInt("blocksize", 2), onnxtest.AString("mode", c.mode)}
			onnxtest.AssertClose(t, "DepthToSpace", runOne(t, "DepthToSpace", 11, attrs, ins), []int{1, 1, 2, 4}, c.want, 0)
			gradCheck(t, onnxtest.OneNode("DepthToSpace", 11, attrs, ins, "y"), onnxtest.Feeds(ins), "x", 1e-6)
		})
	}
	// CRD and DCR differ with two output channels; SpaceToDepth inverts DCR.
	ins := []onnxtest.In{onnxtest.RandFeed("x", 5, 1, 8, 2, 3)}
	dcr := runOne(t, "DepthToSpace", 11, []*onnxpb.AttributeProto{onnxtest.AInt("blocksize", 2)}, ins)
	crd := runOne(t, "DepthToSpace", 11, []*onnxpb.AttributeProto{onnxtest.AInt("blocksize", 2), onnxtest.AString("mode", "CRD")}, ins)
	if d, c := dcr.Float64s(), crd.Float64s(); d[1] == c[1] {
		t.Errorf("DCR and CRD agree at element 1 (%v): modes not distinguished", d[1])
	}
	back := runOne(t, "SpaceToDepth", 11, []*onnxpb.AttributeProto{onnxtest.AInt("blocksize", 2)}, []onnxtest.In{{Name: "x", T: dcr}})
	onnxtest.AssertClose(t, "SpaceToDepth(DepthToSpace(x))", back, []int{1, 8, 2, 3}, ins[0].T.F64, 0)
}

func TestEyeLike(t *testing.T) {
	ins := []onnxtest.In{onnxtest.Feed("x", []int{2, 3}, 0, 0, 0, 0, 0, 0)}
	got := runOne(t, "EyeLike", 9, []*onnxpb.AttributeProto{onnxtest.AInt("k", 1)}, ins)
	onnxtest.AssertClose(t, "EyeLike", got, []int{2, 3}, []float64{0, 1, 0, 0, 0, 1}, 0)
}

// instanceNormCases are InstanceNormalization nodes: the UNet's 2-D planes
// (enough instances to split across goroutines), a 1-D and a 3-D input,
// epsilon set.
func instanceNormCases() []oracleCase {
	r := rand.New(rand.NewSource(21))
	return []oracleCase{
		{"unet planes", nil, []*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 16, 32, 32), onnxtest.RandUniform32(r, "s", 16), onnxtest.RandUniform32(r, "b", 16)}},
		{"1-D eps", []*onnxpb.AttributeProto{onnxtest.AFloat("epsilon", 1e-3)}, []*importer.Tensor{onnxtest.RandUniform32(r, "x", 3, 5, 7), onnxtest.RandUniform32(r, "s", 5), onnxtest.RandUniform32(r, "b", 5)}},
		{"3-D", nil, []*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 3, 4, 3, 5), onnxtest.RandUniform32(r, "s", 3), onnxtest.RandUniform32(r, "b", 3)}},
	}
}

// TestInstanceNormORT checks the forward pass against ONNX Runtime.
func TestInstanceNormORT(t *testing.T) {
	checkAgainstORT(t, "InstanceNormalization", 6, instanceNormCases(), 1e-5)
}

// TestInstanceNorm32MatchesFloat64 checks the float32 kernels (output,
// ∂X, ∂scale, ∂B) against the float64 ones, bit for bit.
func TestInstanceNorm32MatchesFloat64(t *testing.T) {
	for i, c := range instanceNormCases() {
		t.Run(c.name, func(t *testing.T) {
			n := onnxtest.Node("InstanceNormalization", "in", []string{"x", "s", "b"}, []string{"y"}, c.attrs...)
			op := lowerKernel(t, lowerInstanceNorm, n, c.ins[0].Shape, c.ins[1].Shape, c.ins[2].Shape)
			checkKernel32(t, op, int64(i), 1)
		})
	}
}

// TestInstanceNorm32KeptStats checks that the backward passes read the
// statistics the forward pass kept when X is bit for bit the forward
// pass's, with the gradients of an op that keeps nothing, and recompute
// them when X has changed since (one value, or only its sign bit: -0).
func TestInstanceNorm32KeptStats(t *testing.T) {
	const n, c, s = 2, 6, 50
	r := rand.New(rand.NewSource(5))
	fill := func(k int) []float32 {
		a := make([]float32, k)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		return a
	}
	x, sc, b, g := fill(n*c*s), fill(c), fill(c), fill(n*c*s)
	x[7] = 0
	cases := []struct {
		name   string
		change func(x []float32)
		kept   bool
	}{
		{"same X", func([]float32) {}, true},
		{"one value changed", func(x []float32) { x[3*s+1] += 0.5 }, false},
		{"zero to -0", func(x []float32) { x[7] = float32(math.Copysign(0, -1)) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &instNorm32{n: n, c: c, s: s, eps: 1e-5}
			xf := append([]float32(nil), x...)
			p.forward(make([]float32, len(x)), [][]float32{xf, sc, b})
			tc.change(xf)
			k := p.read(xf)
			if (k != nil) != tc.kept {
				t.Fatalf("kept statistics read: %v, want %v", k != nil, tc.kept)
			}
			k.release()
			fresh := &instNorm32{n: n, c: c, s: s, eps: 1e-5}
			for in, size := range []int{n * c * s, c, c} {
				got, want := make([]float32, size), make([]float32, size)
				p.backward(in, got, [][]float32{xf, sc, b}, nil, g)
				fresh.backward(in, want, [][]float32{xf, sc, b}, nil, g)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("gradient %d [%d] = %v, recomputed statistics give %v", in, i, got[i], want[i])
					}
				}
			}
		})
	}
}
