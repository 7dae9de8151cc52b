package onnxops

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestSiLU32MatchesUnfused checks that the fused SiLU's float32 kernels
// give the bits of the unfused ops' float32 kernels: Sigmoid, the Mul's
// forward, the Mul's gradients of both operands, the Sigmoid's gradient
// and the float32 sum of the two gradients of x. Inputs span the
// sigmoid's saturation, signed zeros and values near the block edges.
func TestSiLU32MatchesUnfused(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for _, n := range []int{1, 7, siluBlock - 1, siluBlock + 3, 5000} {
		x, g := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 6)
			g[i] = float32(r.NormFloat64())
		}
		x[0], g[n-1] = float32(math.Copysign(0, -1)), 0
		if n > 3 {
			x[1], x[2], g[3] = 90, -90, float32(math.Copysign(0, -1))
		}
		s, y := make([]float32, n), make([]float32, n)
		sigmoidFwd32(s, [][]float32{x})
		if !arith32("Mul", y, x, s) {
			t.Fatal("no float32 Mul")
		}
		ga, gs, gx := make([]float32, n), make([]float32, n), make([]float32, n)
		arithGrad32("Mul", 0, ga, x, s, g)
		arithGrad32("Mul", 1, gs, x, s, g)
		sigmoidBwd32(0, gx, nil, s, gs)
		fy, fdx := make([]float32, n), make([]float32, n)
		siluFwd32(fy, [][]float32{x})
		siluBwd32(0, fdx, [][]float32{x}, nil, g)
		for i := range x {
			if want := ga[i] + gx[i]; math.Float32bits(fdx[i]) != math.Float32bits(want) {
				t.Fatalf("n=%d: ∂x[%d] (x %v, g %v): fused %v, unfused %v", n, i, x[i], g[i], fdx[i], want)
			}
			if math.Float32bits(fy[i]) != math.Float32bits(y[i]) {
				t.Fatalf("n=%d: y[%d] (x %v): fused %v, unfused %v", n, i, x[i], fy[i], y[i])
			}
		}
	}
}

// siluModel is y = Mul(x, Sigmoid(x)) (operands swapped when swap), with
// the Sigmoid also an output when both.
func siluModel(swap, both bool) (*importer.Model, map[string]*importer.Tensor) {
	x := onnxtest.RandFeed("x", 4, 2, 3, 4, 5)
	m := onnxtest.OneNode("Sigmoid", 13, nil, []onnxtest.In{x}, "s")
	g := m.Proto.Graph
	name, op := "mul", "Mul"
	in := []string{"x", "s"}
	if swap {
		in = []string{"s", "x"}
	}
	g.Node = append(g.Node, &onnxpb.NodeProto{Name: &name, OpType: &op, Input: in, Output: []string{"y"}})
	y := "y"
	outs := []*onnxpb.ValueInfoProto{{Name: &y}}
	if both {
		outs = append(outs, g.Output[0])
	}
	g.Output = outs
	return m, onnxtest.Feeds([]onnxtest.In{x})
}

// TestFuseSiLU checks that a Mul of x by Sigmoid(x), either way round,
// runs as one SiLU node, with outputs equal to the unfused graph's to
// float64 round-off (the Sigmoid still formed when the caller reads it
// too), and that its gradient passes the finite-difference check.
func TestFuseSiLU(t *testing.T) {
	for _, swap := range []bool{false, true} {
		for _, both := range []bool{false, true} {
			t.Run(fmt.Sprintf("swap=%v/sigmoid_read_too=%v", swap, both), func(t *testing.T) {
				m, feeds := siluModel(swap, both)
				want := forwardWith(t, m, feeds, unfused(rewrite.SiLU))
				if y := testGraphWith(t, m, feeds, nil, unfused(rewrite.SiLU)).Vals["y"]; strings.Contains(y.N.Op().String(), "SiLU") {
					t.Fatalf("unfused: y is computed by %v", y.N.Op())
				}
				got := forward(t, m, feeds)
				for name, w := range want {
					g := got[name]
					if g == nil {
						t.Fatalf("output %q missing with the fusion", name)
					}
					onnxtest.AssertClose(t, name, g, w.Shape, w.Float64s(), 1e-12)
				}
				if y := testGraph(t, m, feeds, nil).Vals["y"]; !strings.Contains(y.N.Op().String(), "SiLU") {
					t.Fatalf("y is computed by %v, not the fused op", y.N.Op())
				}
				gradCheck(t, m, feeds, "x", 1e-6)
			})
		}
	}
}
