package onnxops

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestConvDepthwiseORT checks depthwise convolutions that run on ops'
// depthwise path (checked with kernels.ConvDepthwise) against ONNX Runtime:
// 3×3, 5×5 and 7×7, strides 1 and 2, a dilated 5×5 (DeepLabV3's), bias,
// batch 2. kernels'
// TestConvDepthwiseMatchesIm2col compares all three passes with the
// im2col path and TestConvDepthwiseGradFD the gradients with finite
// differences.
func TestConvDepthwiseORT(t *testing.T) {
	r := rand.New(rand.NewSource(10))
	shapes := []struct {
		name string
		x    []int
		k, s int
	}{
		{"3x3 s1", []int{2, 16, 12, 12}, 3, 1},
		{"3x3 s2", []int{2, 24, 13, 11}, 3, 2},
		{"5x5 s1", []int{2, 8, 9, 9}, 5, 1},
		{"5x5 s2", []int{1, 12, 16, 16}, 5, 2},
		{"7x7 s1", []int{2, 32, 8, 8}, 7, 1},
		{"7x7 s1 2x2", []int{2, 16, 2, 2}, 7, 1},
		{"5x5 dilation 2 4x4", []int{2, 8, 4, 4}, 5, 1},
	}
	var cases []oracleCase
	for _, s := range shapes {
		C, p, d := s.x[1], s.k/2, 1
		if strings.Contains(s.name, "dilation 2") {
			p, d = 2*p, 2
		}
		w := []int{C, 1, s.k, s.k}
		params := kernels.ConvParams{Group: C, Strides: []int{s.s, s.s}, Pads: []int{p, p, p, p}, Dilations: []int{d, d}}
		if !kernels.ConvDepthwise(s.x, w, params) {
			t.Fatalf("%s: does not run on the depthwise path", s.name)
		}
		ins := []*importer.Tensor{onnxtest.RandUniform32(r, "x", s.x...), onnxtest.RandUniform32(r, "w", w...), onnxtest.RandUniform32(r, "b", C)}
		attrs := []*onnxpb.AttributeProto{onnxtest.AInt("group", int64(C)), onnxtest.AInts("strides", int64(s.s), int64(s.s)),
			onnxtest.AInts("pads", int64(p), int64(p), int64(p), int64(p)), onnxtest.AInts("dilations", int64(d), int64(d))}
		cases = append(cases, oracleCase{s.name, attrs, ins})
	}
	checkAgainstORT(t, "Conv", 13, cases, 1e-4)
}
