package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// DepthToSpace (PyTorch's pixel_shuffle exports it with mode CRD; DCR is
// the default) and SpaceToDepth, as data movement.

func init() {
	graph.Register("DepthToSpace", 1, lowerDepthSpace)
	graph.Register("SpaceToDepth", 1, lowerDepthSpace)
}

func lowerDepthSpace(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	bs, err := graph.AttrInt(n, "blocksize", 0)
	if err != nil {
		return nil, err
	}
	mode, err := graph.AttrString(n, "mode", "DCR")
	if err != nil {
		return nil, err
	}
	if len(x.Shape) != 4 || bs < 1 {
		return nil, graph.NodeErr(n, "input %q of shape %v with blocksize %d: expected N×C×H×W and blocksize >= 1 (opset %d)", n.Input[0], x.Shape, bs, b.Opset)
	}
	if mode != "DCR" && mode != "CRD" {
		return nil, graph.NodeErr(n, "mode %q: expected DCR or CRD (opset %d)", mode, b.Opset)
	}
	B := int(bs)
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	toSpace := n.GetOpType() == "DepthToSpace"
	// Work in the depth layout (N, Cd, Hd, Wd) → space layout (N, Cs, Hd·B, Wd·B).
	Cd, Hd, Wd := C, H, W
	if !toSpace {
		if H%B != 0 || W%B != 0 {
			return nil, graph.NodeErr(n, "spatial dims %dx%d not divisible by blocksize %d", H, W, B)
		}
		Cd, Hd, Wd = C*B*B, H/B, W/B
	} else if C%(B*B) != 0 {
		return nil, graph.NodeErr(n, "channels %d not divisible by blocksize² %d", C, B*B)
	}
	Cs := Cd / (B * B)
	depthIdx := func(nn, c, h, w, i, j int) int { // depth-layout index of space (nn, c, h·B+i, w·B+j)
		ch := (i*B+j)*Cs + c // DCR
		if mode == "CRD" {
			ch = c*B*B + i*B + j
		}
		return ((nn*Cd+ch)*Hd+h)*Wd + w
	}
	spaceIdx := func(nn, c, h, w, i, j int) int {
		return ((nn*Cs+c)*Hd*B+h*B+i)*Wd*B + w*B + j
	}
	total := N * Cd * Hd * Wd
	idx := make([]int, total)
	for nn := 0; nn < N; nn++ {
		for c := 0; c < Cs; c++ {
			for h := 0; h < Hd; h++ {
				for w := 0; w < Wd; w++ {
					for i := 0; i < B; i++ {
						for j := 0; j < B; j++ {
							if toSpace {
								idx[spaceIdx(nn, c, h, w, i, j)] = depthIdx(nn, c, h, w, i, j)
							} else {
								idx[depthIdx(nn, c, h, w, i, j)] = spaceIdx(nn, c, h, w, i, j)
							}
						}
					}
				}
			}
		}
	}
	out := []int{N, Cs, Hd * B, Wd * B}
	if !toSpace {
		out = []int{N, Cd, Hd, Wd}
	}
	v, err := b.Move(n, n.GetOpType(), []*graph.Value{x}, out, idx)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{v}, nil
}
