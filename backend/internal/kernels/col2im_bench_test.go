package kernels

import (
	"testing"

	"gorgonia.org/tensor"
)

// BenchmarkCol2im times col2im of one sample for a LeNet and an MTAN
// convolution.
func BenchmarkCol2im(b *testing.B) {
	for _, c := range []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"lenet_conv2", []int{1, 10, 14, 14}, []int{20, 10, 5, 5}, ConvParams{}},
		{"mtan_3x3_32", []int{1, 8, 32, 32}, []int{8, 8, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"mtan_3x3_8", []int{1, 32, 8, 8}, []int{32, 32, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				b.Fatal(err)
			}
			col := make([]float32, g.colRows*g.colCols)
			for i := range col {
				col[i] = float32(i%7) - 3
			}
			xg := make([]float32, g.cg*g.inPlane)
			b.ResetTimer()
			for range b.N {
				col2im(&g, col, xg)
			}
		})
	}
}

// BenchmarkIm2col times im2col of one sample for LeNet's and an MTAN
// convolution.
func BenchmarkIm2col(b *testing.B) {
	for _, c := range []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"lenet_conv1", []int{1, 1, 36, 36}, []int{10, 1, 9, 9}, ConvParams{}},
		{"lenet_conv2", []int{1, 10, 14, 14}, []int{20, 10, 5, 5}, ConvParams{}},
		{"mtan_3x3_32", []int{1, 8, 32, 32}, []int{8, 8, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		// the 3×3 layers of 8×8 and 4×4 planes of the 64×64 torchvision models
		{"3x3_8x8", []int{1, 32, 8, 8}, []int{32, 32, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
		{"3x3_4x4", []int{1, 64, 4, 4}, []int{64, 64, 3, 3}, ConvParams{Pads: []int{1, 1, 1, 1}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			g, err := newConvGeom(tensor.Shape(c.x), tensor.Shape(c.w), c.p)
			if err != nil {
				b.Fatal(err)
			}
			xg := make([]float32, g.cg*g.inPlane)
			for i := range xg {
				xg[i] = float32(i%7) - 3
			}
			col := make([]float32, g.colRows*g.colCols)
			b.ResetTimer()
			for range b.N {
				im2col(&g, xg, col)
			}
		})
	}
}
