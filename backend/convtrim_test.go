package backend

import (
	"math"
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/png"
)

// asppModel is x[N,5,4,4] → Conv 1×1 → Conv 3×3 of dilation 12
// (DeepLabV3's ASPP: on a 4×4 plane only the centre tap reads input; its
// input gradient is needed for the first Conv's weights) → Relu →
// {Conv 1×1 → LogSoftmax = logp (3 classes per pixel), Conv 1×1 = reg}.
func asppModel() *importer.Model {
	r := rand.New(rand.NewSource(5))
	nodes := []*onnxpb.NodeProto{
		onnxtest.Node("Conv", "stem", []string{"x", "W0"}, []string{"s"}),
		onnxtest.Node("Conv", "aspp", []string{"s", "W", "B"}, []string{"h0"},
			onnxtest.AInts("dilations", 12, 12), onnxtest.AInts("pads", 12, 12, 12, 12)),
		onnxtest.Node("Relu", "relu", []string{"h0"}, []string{"h"}),
		onnxtest.Node("Conv", "heada", []string{"h", "Wa"}, []string{"za"}),
		onnxtest.Node("LogSoftmax", "lsm", []string{"za"}, []string{"logp"}, onnxtest.AInt("axis", 1)),
		onnxtest.Node("Conv", "headb", []string{"h", "Wb"}, []string{"reg"}),
	}
	inits := []*importer.Tensor{onnxtest.RandF32(r, "W0", 8, 5, 1, 1), onnxtest.RandF32(r, "W", 6, 8, 3, 3), onnxtest.RandF32(r, "B", 6), onnxtest.RandF32(r, "Wa", 3, 6, 1, 1), onnxtest.RandF32(r, "Wb", 1, 6, 1, 1)}
	return onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {-1, 5, 4, 4}}, "logp", "reg")
}

// TestConvTrimStepsMatchWholeKernel runs the ASPP model through steps
// whose parameters an optimizer-like update changes in place between
// evaluations (writing into Theta), with padding-only taps dropped and
// with the whole kernel (graph.Options.WholeConvKernels): the losses and J of every
// step must agree, so the smaller kernel's weights a forward pass keeps
// for its backward passes are never those of an earlier step.
func TestConvTrimStepsMatchWholeKernel(t *testing.T) {
	if !kernels.ConvTrimmed([]int{4, 8, 4, 4}, []int{6, 8, 3, 3}, kernels.ConvParams{Dilations: []int{12, 12}, Pads: []int{12, 12, 12, 12}}) {
		t.Fatal("the ASPP convolution drops no taps")
	}
	r := rand.New(rand.NewSource(6))
	const n = 4
	ya := make([]int64, n*16)
	for i := range ya {
		ya[i] = int64(r.Intn(3))
	}
	batch := map[string]*importer.Tensor{"x": onnxtest.RandF32(r, "x", n, 5, 4, 4),
		"ya": importer.NewInt64("ya", []int{n, 4, 4}, ya), "yb": onnxtest.RandF32(r, "yb", n, 1, 4, 4)}
	const steps = 4
	run := func(trim bool) (losses [steps][]float64, jacs [steps][]float32) {
		md, err := Open(asppModel(), mustTasks(t, "a:nll:logp:ya", "b:mse:reg:yb"), Options{build: graph.Options{WholeConvKernels: !trim}})
		if err != nil {
			t.Fatal(err)
		}
		noise := rand.New(rand.NewSource(7))
		for s := range steps {
			if s > 0 { // the update, in place
				for i := range md.Theta() {
					md.Theta()[i] += float32(0.5 * noise.NormFloat64())
				}
			}
			losses[s] = make([]float64, 2)
			jac := png.NewJacobian(2, md.NumParams())
			if err := md.Evaluate(batch, losses[s], &jac); err != nil {
				t.Fatal(err)
			}
			jacs[s] = jac.Data
		}
		return losses, jacs
	}
	wl, wj := run(false)
	gl, gj := run(true)
	for s := range steps {
		for k := range wl[s] {
			if math.Abs(gl[s][k]-wl[s][k]) > 1e-5*math.Max(1, math.Abs(wl[s][k])) {
				t.Errorf("step %d, loss %d: trimmed %v, whole kernel %v", s, k, gl[s][k], wl[s][k])
			}
		}
		scale := 0.0
		for _, v := range wj[s] {
			scale = max(scale, math.Abs(float64(v)))
		}
		for i, v := range wj[s] {
			if math.Abs(float64(gj[s][i]-v)) > 1e-5*scale {
				t.Fatalf("step %d: J[%d] trimmed %v, whole kernel %v (largest entry %v)", s, i, gj[s][i], v, scale)
			}
		}
	}
}
