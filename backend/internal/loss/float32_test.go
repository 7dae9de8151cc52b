package loss

import (
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/shape"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestRegressNormalLoss32MatchesFloat64 checks the float32 kernels of the
// mse, l1, depth_l1 and normal_cos losses against the float64 ones, bit
// for bit, into dirty buffers, on targets with zero elements (depth_l1's
// mask) and all-zero pixels (normal_cos's invalid pixels), and on a
// prediction with a zero pixel (normal_cos's zero subgradient).
func TestRegressNormalLoss32MatchesFloat64(t *testing.T) {
	s := []int{3, 3, 4, 5}
	r := rand.New(rand.NewSource(8))
	for _, loss := range []string{"mse", "l1", "depth_l1", "normal_cos"} {
		t.Run(loss, func(t *testing.T) {
			b := graph.NewBuilder(tensor.Float32, 17)
			out := G.NewTensor(b.Graph, tensor.Float32, len(s), G.WithShape(s...), G.WithName("out"))
			tg := G.NewTensor(b.Graph, tensor.Float32, len(s), G.WithShape(s...), G.WithName("tg"))
			node, err := Lookup(loss).Build(b, Head{Task: "t", Kind: loss}, out, tg)
			if err != nil {
				t.Fatal(err)
			}
			op := node.Op().(*graph.KernelOp)
			if op.Fwd32 == nil || op.Bwd32 == nil {
				t.Fatal("no float32 kernels")
			}
			x32, t32 := make([]float32, shape.Numel(s)), make([]float32, shape.Numel(s))
			for i := range x32 {
				x32[i], t32[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
				if i%4 == 1 {
					t32[i] = 0 // depth_l1's mask
				}
			}
			inner := s[2] * s[3]
			for c := 0; c < s[1]; c++ {
				t32[c*inner+2] = 0        // an all-zero target pixel of example 0
				x32[(s[1]+c)*inner+3] = 0 // an all-zero predicted pixel of example 1
			}
			x64, t64 := make([]float64, len(x32)), make([]float64, len(t32))
			for i := range x32 {
				x64[i], t64[i] = float64(x32[i]), float64(t32[i])
			}
			y32 := onnxtest.Dirty32(1)
			op.Fwd32(y32, [][]float32{x32, t32})
			y64 := make([]float64, 1)
			op.Fwd(y64, [][]float64{x64, t64})
			if !onnxtest.SameBits32(y32[0], float32(y64[0])) {
				t.Fatalf("loss %v, float64 path %v", y32[0], float32(y64[0]))
			}
			for _, g := range []float32{1, -0.75} {
				d32 := onnxtest.Dirty32(len(x32))
				if !op.Bwd32(0, d32, [][]float32{x32, t32}, y32, []float32{g}) {
					t.Fatal("the float32 gradient declined")
				}
				d64 := make([]float64, len(x32))
				op.Bwd(0, d64, [][]float64{x64, t64}, []float64{float64(y32[0])}, []float64{float64(g)})
				for i := range d32 {
					if !onnxtest.SameBits32(d32[i], float32(d64[i])) {
						t.Fatalf("gradient [%d] = %v, float64 path %v", i, d32[i], float32(d64[i]))
					}
				}
			}
		})
	}
}
