package importer_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// The backend evaluates x.view(x.size(0), -1)'s shape chain with concrete
// shapes: Shape of x (batch 8), then Gather of its first dimension.
func ExampleEvalNode() {
	shape := &onnxpb.NodeProto{OpType: proto.String("Shape"), Input: []string{"x"}, Output: []string{"s"}}
	s, err := importer.EvalNode(shape, 13, []*importer.Tensor{{Shape: []int{8, 2, 3, 4}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	gather := &onnxpb.NodeProto{OpType: proto.String("Gather"), Input: []string{"s", "i"}, Output: []string{"n"}}
	n, err := importer.EvalNode(gather, 13, []*importer.Tensor{s[0], importer.NewInt64("i", []int{}, []int64{0})})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s[0].Name, s[0].I64, n[0].Name, n[0].Shape, n[0].I64)
	// Output: s [8 2 3 4] n [] [8]
}

func ExampleShapeOf() {
	fmt.Println(importer.ShapeOf([]int{8, 3, 32, 32}, 0, math.MaxInt).I64)
	fmt.Println(importer.ShapeOf([]int{8, 3, 32, 32}, -2, math.MaxInt).I64)
	// Output:
	// [8 3 32 32]
	// [32 32]
}

func ExampleFold() {
	m, err := importer.Load("testdata/view_dyn13.onnx")
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := importer.Fold(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("folded:", len(f.FoldedNodes), "Constant nodes")
	for _, n := range f.Nodes {
		fmt.Print(n.GetOpType(), " ")
	}
	fmt.Println()
	// Output:
	// folded: 3 Constant nodes
	// Shape Gather Unsqueeze Concat Reshape Gemm
}

// Save writes a model with new values for some initializers; the rest of
// the model is kept as it was.
func ExampleSave() {
	m, err := importer.Load("testdata/view_dyn13.onnx")
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "tuned.onnx")
	bias := importer.NewFloat32("fc.bias", []int{3}, []float32{0.5, -1, 2})
	err = importer.Save(out, m, map[string]*importer.Tensor{"fc.bias": bias}, importer.SaveOptions{
		Producer: map[string]string{"paretonav": `{"steps":100}`},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	m2, err := importer.Load(out)
	if err != nil {
		fmt.Println(err)
		return
	}
	inits, err := m2.Initializers()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(inits["fc.bias"].F32, m2.Proto.MetadataProps[0].GetKey(), m2.Proto.MetadataProps[0].GetValue())
	// Saving again over the same file needs Force.
	fmt.Println(importer.Save(out, m, nil, importer.SaveOptions{}) != nil)
	// Output:
	// [0.5 -1 2] paretonav {"steps":100}
	// true
}
