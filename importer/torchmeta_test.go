package importer

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// withMeta returns a value_info entry for name carrying metadata_props
// (field 4, IR 10) as the dynamo exporter writes them.
func withMeta(name string, kv ...string) *onnxpb.ValueInfoProto {
	vi := &onnxpb.ValueInfoProto{Name: proto.String(name)}
	var raw []byte
	for i := 0; i+1 < len(kv); i += 2 {
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.BytesType)
		e = protowire.AppendString(e, kv[i])
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendString(e, kv[i+1])
		raw = protowire.AppendTag(raw, fieldVIMeta, protowire.BytesType)
		raw = protowire.AppendBytes(raw, e)
	}
	vi.ProtoReflect().SetUnknown(raw)
	return vi
}

// TestNotParameters checks which initializers the dynamo exporter's
// metadata marks as no parameter, after an encode/decode round trip.
func TestNotParameters(t *testing.T) {
	g := &onnxpb.GraphProto{
		Initializer: []*onnxpb.TensorProto{
			mkInit(f32([]int{2}, 1, 2)), mkInit(f32([]int{2}, 3, 4)), mkInit(f32([]int{2}, 5, 6)),
			mkInit(f32([]int{2, 2}, 1, 2, 3, 4)), mkInit(f32([]int{1}, 0.5)), mkInit(f32([]int{1}, 7)),
			mkInit(f32([]int{1}, 8)), mkInit(f32([]int{2, 2}, 4, 3, 2, 1)),
		},
		ValueInfo: []*onnxpb.ValueInfoProto{
			withMeta("w", torchKindKey, "PARAMETER", "pkg.torch.onnx.original_node_name", "p_w"),
			withMeta("mask", torchKindKey, "BUFFER"),
			withMeta("c", torchKindKey, "CONSTANT_TENSOR"),
			withMeta("wt", foldedFromKey, "['w']"),
			withMeta("scale", foldedFromKey, "['val_3', 'val_4']"),
			withMeta("mixed", foldedFromKey, `["mask", "w"]`),
			withMeta("gone", foldedFromKey, "['enc.fc.weight']"),
			withMeta("not_an_init", torchKindKey, "BUFFER"),
		},
	}
	for i, n := range []string{"w", "mask", "c", "wt", "scale", "mixed", "plain", "gone"} {
		g.Initializer[i].Name = proto.String(n)
	}
	b, err := proto.Marshal(&onnxpb.ModelProto{IrVersion: proto.Int64(10), Graph: g})
	if err != nil {
		t.Fatal(err)
	}
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		t.Fatal(err)
	}
	got := (&Model{Proto: &mp}).NotParameters()
	var names []string
	for _, n := range []string{"w", "mask", "c", "wt", "scale", "mixed", "plain", "gone", "not_an_init"} {
		if _, ok := got[n]; ok {
			names = append(names, n)
		}
	}
	if want := []string{"mask", "c", "scale"}; !reflect.DeepEqual(names, want) {
		t.Errorf("not parameters %v, want %v (%v)", names, want, got)
	}
	if !strings.Contains(got["mask"], "BUFFER") || !strings.Contains(got["scale"], "val_3, val_4") {
		t.Errorf("reasons do not name the kind or the sources: %v", got)
	}
	if (&Model{Proto: &onnxpb.ModelProto{Graph: &onnxpb.GraphProto{}}}).NotParameters() != nil {
		t.Error("a model without metadata lists initializers")
	}
}

// TestNotParametersTorchExport reads the metadata of a PyTorch 2.x dynamo
// export (backend/testdata/torch2): timm's Swin, whose attention mask and
// index tables are buffers.
func TestNotParametersTorchExport(t *testing.T) {
	m, err := Load("../backend/testdata/torch2/swin_dynamo_op20.onnx")
	if err != nil {
		t.Fatal(err)
	}
	got := m.NotParameters()
	for _, n := range []string{"body.layers.0.blocks.1.attn_mask", "body.layers.0.blocks.0.attn.relative_position_index"} {
		if _, ok := got[n]; !ok {
			t.Errorf("%s is not listed: %v", n, got)
		}
	}
	if _, ok := got["body.layers.0.blocks.0.attn.qkv.weight"]; ok {
		t.Errorf("a parameter is listed: %v", got)
	}
	// The optimized export lifts the attention scale (q * 0.25) into a
	// scalar initializer without metadata.
	m, err = Load("../backend/testdata/torch2/rejected_swin_dynopt_op20.onnx")
	if err != nil {
		t.Fatal(err)
	}
	got = m.NotParameters()
	if _, ok := got["val_48"]; !ok {
		t.Errorf("the lifted scale val_48 is not listed: %v", got)
	}
	for _, n := range []string{"unsqueeze", "val_25", "head_a.weight"} {
		if _, ok := got[n]; ok {
			t.Errorf("%s is listed: %s", n, got[n])
		}
	}
}

// TestOptimizerRewritten checks what the onnxscript optimizer's rewrites
// of PyTorch 2.x dynamo exports (backend/testdata/torch2) are reported as.
func TestOptimizerRewritten(t *testing.T) {
	const dir = "../backend/testdata/torch2/"
	cases := []struct {
		file string   // under dir, or this package's testdata/
		want []string // some of the listed initializers
		none []string // initializers that must not be listed
	}{
		// BatchNorm fused into the Conv: the weight keeps its name.
		{"resnet_dynopt_op20.onnx", []string{"body.conv1.0.weight", "body.conv1.0.weight_bias", "body.layer1.0.conv1.weight"}, []string{"head_a.weight"}},
		// The relative position bias table gathered by its index.
		{"rejected_swin_dynopt_op20.onnx", []string{"unsqueeze", "unsqueeze_1"}, []string{"val_25", "val_48", "head_a.weight"}},
		// The Conv keeps its bias's name; Resize's constant scales (a
		// bilinear F.interpolate(scale_factor=2)) carry no metadata either,
		// but are no weight.
		{"upsample_dynopt_op20.onnx", []string{"conv1.weight", "conv1.bias"}, []string{"val_8", "conv2.weight"}},
		// Transposed Linear weights and reshaped layer scales are kept.
		{"vit2_dynopt_op20.onnx", nil, []string{"val_14"}},
		{"convnext_dynopt_op20.onnx", nil, []string{"view", "view_1"}},
		{"swin_dynamo_op20.onnx", nil, nil},
		{"swin_ts_op20.onnx", nil, nil},
		// The README's export snippet, run under PyTorch 2.15 as it once
		// read (dynamo=True by default, opset_version=17: converted down
		// from 18, the initializers' metadata lost; only the fused Conv
		// nodes' rule_name is left), and as it reads now.
		{"testdata/readme_torch2/fused/model.onnx", []string{"trunk.0.weight", "trunk.0.bias", "trunk.3.weight", "trunk.3.bias"}, []string{"seg_head.weight", "depth_head.bias"}},
		{"testdata/readme_torch2/fixed/model.onnx", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := dir + c.file
			if strings.HasPrefix(c.file, "testdata/") { // this package's own
				path = c.file
			}
			m, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			got := m.OptimizerRewritten()
			if c.want == nil && got != nil {
				t.Errorf("listed %v, want none", got)
			}
			for _, n := range c.want {
				if _, ok := got[n]; !ok {
					t.Errorf("%s not listed (%d listed: %v)", n, len(got), got)
				}
			}
			for _, n := range c.none {
				if r, ok := got[n]; ok {
					t.Errorf("%s listed: %s", n, r)
				}
			}
		})
	}
}
