package importer

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestValidate checks each kind of problem Validate reports, with the
// phrases its message must contain (the node or value named, and what was
// expected).
func TestValidate(t *testing.T) {
	cases := []struct {
		desc   string
		modify func(m *onnxpb.ModelProto)
		want   []string // substrings, one problem each; nil: valid
	}{
		{"valid", func(*onnxpb.ModelProto) {}, nil},
		{"IR 3", func(m *onnxpb.ModelProto) {
			m.IrVersion = proto.Int64(3)
			m.Graph.Input = append(m.Graph.Input, valueInfo("w"), valueInfo("s"))
		}, nil},
		{"IR 2", func(m *onnxpb.ModelProto) { m.IrVersion = proto.Int64(2) }, []string{"IR version 2 is not supported (expected 3 to 10"}},
		{"IR 9", func(m *onnxpb.ModelProto) { m.IrVersion = proto.Int64(9) }, nil},
		{"IR 10", func(m *onnxpb.ModelProto) { m.IrVersion = proto.Int64(10) }, nil},
		{"IR 11", func(m *onnxpb.ModelProto) { m.IrVersion = proto.Int64(11) }, []string{"IR version 11 is newer than supported (expected 3 to 10"}},
		{"opset 6", func(m *onnxpb.ModelProto) { m.OpsetImport[0].Version = proto.Int64(6) }, []string{"opset 6 is not supported (expected 7 to 21)"}},
		{"opset 21", func(m *onnxpb.ModelProto) { m.OpsetImport[0].Version = proto.Int64(21) }, nil},
		{"opset 22", func(m *onnxpb.ModelProto) { m.OpsetImport[0].Version = proto.Int64(22) }, []string{"opset 22 is not supported (expected 7 to 21)"}},
		{"ai.onnx domain name", func(m *onnxpb.ModelProto) { m.OpsetImport[0].Domain = proto.String("ai.onnx") }, nil},
		{"no default opset", func(m *onnxpb.ModelProto) {
			m.OpsetImport[0].Domain = proto.String("com.microsoft")
		}, []string{"no default-domain (ai.onnx) entry", `node #0 (Add): domain "" is not imported`, `node #1 (Reshape): domain "" is not imported`}},
		{"undefined input", func(m *onnxpb.ModelProto) { m.Graph.Node[0].Input[0] = "nope" }, []string{`node #0 (Add): input "nope" is not produced by an earlier node, an initializer or a graph input`}},
		{"later input", func(m *onnxpb.ModelProto) {
			m.Graph.Node[0], m.Graph.Node[1] = m.Graph.Node[1], m.Graph.Node[0]
		}, []string{`node #0 (Reshape): input "a" is not produced`}},
		{"duplicate output", func(m *onnxpb.ModelProto) {
			m.Graph.Node[1].Output[0] = "a"
			m.Graph.Node[1].Name = proto.String("r")
		}, []string{`node "r" (Reshape): value "a" is already defined by node #0 (Add)`, `graph output "y": not produced`}},
		{"output shadows initializer", func(m *onnxpb.ModelProto) { m.Graph.Node[0].Output[0] = "w"; m.Graph.Node[1].Input[0] = "w" }, []string{`value "w" is already defined by initializer`}},
		{"empty op_type", func(m *onnxpb.ModelProto) { m.Graph.Node[0].OpType = proto.String("") }, []string{"node #0 (): empty op_type"}},
		{"bad initializer", func(m *onnxpb.ModelProto) { m.Graph.Initializer[0].Dims = []int64{1e12} }, []string{`initializer "w": tensor "w": declared shape [1000000000000] exceeds`}},
		{"all at once", func(m *onnxpb.ModelProto) {
			m.IrVersion = proto.Int64(1)
			m.Graph.Node[0].OpType = proto.String("")
			m.Graph.Node[1].Input[1] = "missing"
		}, []string{"IR version 1", "empty op_type", `input "missing"`}},
		{"subgraph sees outer scope", func(m *onnxpb.ModelProto) {
			body := &onnxpb.GraphProto{
				Node:   []*onnxpb.NodeProto{mkNode("Identity", []string{"a"}, []string{"z"})},
				Output: []*onnxpb.ValueInfoProto{valueInfo("z")},
			}
			m.Graph.Node = append(m.Graph.Node, mkNode("If", []string{"c"}, []string{"q"},
				&onnxpb.AttributeProto{Name: proto.String("then_branch"), G: body, Type: onnxpb.AttributeProto_GRAPH.Enum()}))
			m.Graph.Input = append(m.Graph.Input, valueInfo("c"))
		}, nil},
		{"subgraph undefined", func(m *onnxpb.ModelProto) {
			body := &onnxpb.GraphProto{
				Node:   []*onnxpb.NodeProto{mkNode("Identity", []string{"later"}, []string{"z"})},
				Output: []*onnxpb.ValueInfoProto{valueInfo("z")},
			}
			m.Graph.Node = append(m.Graph.Node, mkNode("If", []string{"a"}, []string{"later"},
				&onnxpb.AttributeProto{Name: proto.String("then_branch"), G: body, Type: onnxpb.AttributeProto_GRAPH.Enum()}))
		}, []string{`attribute "then_branch": node #0 (Identity): input "later" is not produced`}},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			m := tiny()
			c.modify(m)
			err := Validate(m)
			if c.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("err = %v, want an ErrorList", err)
			}
			if len(list) != len(c.want) {
				t.Errorf("%d problems, want %d:\n%v", len(list), len(c.want), err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			// Decode reports the same problems.
			if _, derr := Decode(marshal(t, m)); derr == nil || derr.Error() != err.Error() {
				t.Errorf("Decode err = %v, want %v", derr, err)
			}
		})
	}
}

func TestDecodeNotONNX(t *testing.T) {
	for _, c := range []struct {
		desc string
		b    []byte
		want string
	}{
		{"garbage", []byte{0xff, 0xff, 0xff}, "not an ONNX model (protobuf decoding failed)"},
		{"empty", nil, "no graph"},
		{"text", []byte("hello world\n"), "not an ONNX model"},
	} {
		t.Run(c.desc, func(t *testing.T) {
			if _, err := Decode(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestNewerElementTypes checks that tensors of the types IR 9 and 10
// added are refused naming the type.
func TestNewerElementTypes(t *testing.T) {
	for dt, want := range map[int32]string{17: "unsupported element type 17, FLOAT8E4M3FN (IR 9)", 22: "unsupported element type 22, INT4 (IR 10)"} {
		mp := tiny()
		mp.IrVersion = proto.Int64(10)
		mp.Graph.Initializer = append(mp.Graph.Initializer, &onnxpb.TensorProto{Name: proto.String("q"), DataType: proto.Int32(dt), Dims: []int64{2}, RawData: []byte{1, 2}})
		if err := Validate(mp); err == nil || !strings.Contains(err.Error(), `initializer "q": `+want) {
			t.Errorf("type %d: got %v, want %q", dt, err, want)
		}
		if _, err := DecodeTensor(mp.Graph.Initializer[len(mp.Graph.Initializer)-1]); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeTensor type %d: got %v", dt, err)
		}
	}
}
