package onnxops

import (
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestConvGroupedORT checks grouped (not depthwise) convolutions that run
// on the kernels' grouped path (checked with kernels.ConvGrouped) against ONNX
// Runtime: RegNetX's 16-channel groups on 2×2 and 4×4 planes, ResNeXt-style
// groups of 4, more filters than channels per group, 5×5, bias, batch 1,
// 2 and 4. kernels' TestConvGroupedMatchesIm2col compares all three passes with
// the per-group im2col path and TestConvGroupedGradFD the gradients with
// finite differences.
func TestConvGroupedORT(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	shapes := []struct {
		name     string
		x        []int
		m, group int
		k        int
	}{
		{"regnet 2x2", []int{4, 48, 2, 2}, 48, 3, 3},
		{"regnet 4x4", []int{4, 32, 4, 4}, 32, 2, 3},
		{"regnet 4x4 g4", []int{2, 64, 4, 4}, 64, 4, 3},
		{"resnext g8", []int{2, 32, 5, 6}, 32, 8, 3},
		{"m 2x c", []int{2, 12, 5, 5}, 24, 3, 3},
		{"5x5", []int{1, 8, 7, 7}, 8, 2, 5},
	}
	var cases []oracleCase
	for _, s := range shapes {
		p := s.k / 2
		w := []int{s.m, s.x[1] / s.group, s.k, s.k}
		params := kernels.ConvParams{Group: s.group, Pads: []int{p, p, p, p}}
		if !kernels.ConvGrouped(s.x, w, params) {
			t.Fatalf("%s: does not run on the grouped path", s.name)
		}
		ins := []*importer.Tensor{onnxtest.RandUniform32(r, "x", s.x...), onnxtest.RandUniform32(r, "w", w...), onnxtest.RandUniform32(r, "b", s.m)}
		attrs := []*onnxpb.AttributeProto{onnxtest.AInt("group", int64(s.group)), onnxtest.AInts("pads", int64(p), int64(p), int64(p), int64(p))}
		cases = append(cases, oracleCase{s.name, attrs, ins})
	}
	checkAgainstORT(t, "Conv", 13, cases, 1e-4)
}

// TestConvTrimTapsORT checks convolutions whose padding-only taps ops
// drops (kernels' TestConvTrimTaps, TestConvTrimTapsGradFD) against ONNX
// Runtime: DeepLabV3's ASPP 3×3 of dilation 12 on a 4×4 plane, a dilated
// 5×5 on a 3×3 plane, a 7×7 of stride 2 on 3×3, grouped, bias.
func TestConvTrimTapsORT(t *testing.T) {
	r := rand.New(rand.NewSource(13))
	shapes := []struct {
		name    string
		x, w    []int
		group   int
		s, d, p int
	}{
		{"aspp d12", []int{2, 16, 4, 4}, []int{8, 16, 3, 3}, 1, 1, 12, 12},
		{"5x5 d2 on 3x3", []int{2, 4, 3, 3}, []int{6, 4, 5, 5}, 1, 1, 2, 4},
		{"7x7 s2 on 3x3", []int{2, 3, 3, 3}, []int{4, 3, 7, 7}, 1, 2, 1, 3},
		{"grouped 5x5 on 2x2", []int{2, 4, 2, 2}, []int{6, 2, 5, 5}, 2, 1, 1, 2},
	}
	var cases []oracleCase
	for _, s := range shapes {
		params := kernels.ConvParams{Group: s.group, Strides: []int{s.s, s.s}, Dilations: []int{s.d, s.d}, Pads: []int{s.p, s.p, s.p, s.p}}
		if !kernels.ConvTrimmed(s.x, s.w, params) {
			t.Fatalf("%s: no taps are dropped", s.name)
		}
		ins := []*importer.Tensor{onnxtest.RandUniform32(r, "x", s.x...), onnxtest.RandUniform32(r, "w", s.w...), onnxtest.RandUniform32(r, "b", s.w[0])}
		attrs := []*onnxpb.AttributeProto{onnxtest.AInt("group", int64(s.group)), onnxtest.AInts("strides", int64(s.s), int64(s.s)),
			onnxtest.AInts("dilations", int64(s.d), int64(s.d)), onnxtest.AInts("pads", int64(s.p), int64(s.p), int64(s.p), int64(s.p))}
		cases = append(cases, oracleCase{s.name, attrs, ins})
	}
	checkAgainstORT(t, "Conv", 13, cases, 1e-4)
}
