package onnxops

import (
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestConvWinogradORT checks 3×3 convolutions that run as Winograd
// F(2×2, 3×3) with the default bounds (checked with kernels.ConvWinograd)
// against ONNX Runtime: even and odd planes, a bias, batch 2, more
// filters than channels. kernels' TestWinogradMatchesIm2col compares the
// float32 passes and both gradients with the im2col paths.
func TestConvWinogradORT(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	pads := onnxtest.AInts("pads", 1, 1, 1, 1)
	shapes := []struct {
		name string
		x, w []int
		bias bool
	}{
		{"64ch 24x32", []int{1, 64, 24, 32}, []int{64, 64, 3, 3}, true},
		{"128 to 192 odd 13x29 batch 2", []int{2, 128, 13, 29}, []int{192, 128, 3, 3}, false},
	}
	var cases []oracleCase
	for _, s := range shapes {
		if !kernels.ConvWinograd(s.x, s.w, kernels.ConvParams{Pads: []int{1, 1, 1, 1}}) {
			t.Fatalf("%s: does not run as Winograd", s.name)
		}
		ins := []*importer.Tensor{onnxtest.RandUniform32(r, "x", s.x...), onnxtest.RandUniform32(r, "w", s.w...)}
		if s.bias {
			ins = append(ins, onnxtest.RandUniform32(r, "b", s.w[0]))
		}
		cases = append(cases, oracleCase{s.name, []*onnxpb.AttributeProto{pads}, ins})
	}
	checkAgainstORT(t, "Conv", 13, cases, 1e-4)
}
