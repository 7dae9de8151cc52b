package importer

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestDataTypes decodes dtypes.onnx (every element type, raw_data and
// typed fields) and compares with the values gen.py wrote to dtypes.json,
// with float raw_data copied as bytes (little-endian machines) and
// decoded element by element (the path of big-endian ones).
func TestDataTypes(t *testing.T) {
	native := littleEndian
	defer func() { littleEndian = native }()
	for _, le := range []bool{native, false} {
		littleEndian = le
		t.Run(map[bool]string{true: "bytes", false: "elements"}[le], checkDataTypes)
	}
}

func checkDataTypes(t *testing.T) {
	m, err := Load("testdata/dtypes.onnx")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/dtypes.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]json.Number
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&want); err != nil {
		t.Fatal(err)
	}
	inits, err := m.Initializers()
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]DataType{
		"float": Float32, "double": Float64, "float16": Float16, "bfloat16": onnxpb.TensorProto_BFLOAT16,
		"int8": Int8, "uint8": Uint8, "int16": onnxpb.TensorProto_INT16, "uint16": onnxpb.TensorProto_UINT16,
		"int32": Int32, "uint32": onnxpb.TensorProto_UINT32, "int64": Int64, "uint64": onnxpb.TensorProto_UINT64,
		"bool": Bool,
	}
	if len(want) != len(types) {
		t.Fatalf("dtypes.json has %d types, the test knows %d", len(want), len(types))
	}
	for name, dt := range types {
		for _, form := range []string{"raw", "typed"} {
			tn := name + "_" + form
			tt := inits[tn]
			if tt == nil {
				t.Errorf("%s: missing", tn)
				continue
			}
			if tt.Type != dt || len(tt.Shape) != 2 || tt.Shape[0] != 2 || tt.Shape[1] != 2 {
				t.Errorf("%s: type %v shape %v, want %v [2 2]", tn, tt.Type, tt.Shape, dt)
			}
			for i, w := range want[name] {
				if tt.I64 != nil {
					wi, err := w.Int64()
					if err != nil { // uint64 beyond int64 does not occur in the fixture
						t.Fatalf("%s[%d]: %v", tn, i, err)
					}
					if tt.I64[i] != wi {
						t.Errorf("%s[%d] = %d, want %d", tn, i, tt.I64[i], wi)
					}
					continue
				}
				wf, _ := w.Float64()
				got := tt.Float64s()[i]
				if dt == Float32 || dt == Float16 {
					wf = float64(float32(wf))
				}
				if dt == Float16 {
					wf = float64(halfToFloat(floatToHalf(float32(wf))))
				}
				if got != wf {
					t.Errorf("%s[%d] = %v, want %v", tn, i, got, wf)
				}
			}
		}
	}
}

// TestHalfRoundTrip checks that every float16 bit pattern survives
// decoding to float32 and encoding back, and a few rounding cases.
func TestHalfRoundTrip(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := halfToFloat(uint16(h))
		if got := floatToHalf(f); got != uint16(h) {
			t.Fatalf("half %#04x -> %v -> %#04x", h, f, got)
		}
		bf := math.Float32frombits(uint32(h) << 16)
		if got := floatToBFloat16(bf); got != uint16(h) {
			t.Fatalf("bfloat16 %#04x -> %v -> %#04x", h, bf, got)
		}
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{1, 0x3c00},
		{65504, 0x7bff},
		{65520, 0x7c00},                      // rounds up to +Inf
		{1 + 1.0/2048, 0x3c00},               // tie to even (down)
		{1 + 3.0/2048, 0x3c02},               // tie to even (up)
		{float32(math.Pow(2, -24)), 0x0001},  // smallest subnormal
		{float32(math.Pow(2, -25)), 0x0000},  // tie to even: zero
		{float32(math.Pow(2, -25)) * 1.5, 1}, // above the tie
		{-float32(math.Pow(2, -14)), 0x8400}, // smallest negative normal
		{float32(math.Inf(-1)), 0xfc00},
	} {
		if got := floatToHalf(c.f); got != c.want {
			t.Errorf("floatToHalf(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

// TestDecodeTensorErrors checks that malformed tensors are refused with a
// message naming them, before any large allocation.
func TestDecodeTensorErrors(t *testing.T) {
	name := proto.String("w")
	f32 := proto.Int32(int32(Float32))
	cases := []struct {
		desc string
		tp   *onnxpb.TensorProto
		want string
	}{
		{"absurd dims", &onnxpb.TensorProto{Name: name, DataType: f32, Dims: []int64{1e12}, RawData: []byte{1, 2, 3, 4}}, "exceeds"},
		{"absurd product", &onnxpb.TensorProto{Name: name, DataType: f32, Dims: []int64{1 << 20, 1 << 20, 1 << 20}}, "exceeds"},
		{"negative dim", &onnxpb.TensorProto{Name: name, DataType: f32, Dims: []int64{-1}}, "negative"},
		{"short raw", &onnxpb.TensorProto{Name: name, DataType: f32, Dims: []int64{2}, RawData: []byte{1, 2, 3, 4}}, "raw data has 4 bytes"},
		{"short typed", &onnxpb.TensorProto{Name: name, DataType: f32, Dims: []int64{2}, FloatData: []float32{1}}, "has 1 values"},
		{"string", &onnxpb.TensorProto{Name: name, DataType: proto.Int32(int32(onnxpb.TensorProto_STRING)), Dims: []int64{1}}, "unsupported element type"},
		{"undefined", &onnxpb.TensorProto{Name: name, Dims: []int64{1}}, "unsupported element type"},
		{"external", &onnxpb.TensorProto{Name: name, DataType: f32, DataLocation: onnxpb.TensorProto_EXTERNAL.Enum()}, "external"},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			_, err := DecodeTensor(c.tp)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"w"`) {
				t.Errorf("err = %v, want one naming \"w\" and containing %q", err, c.want)
			}
		})
	}
}

// TestTruncated decodes every prefix of a valid model and some corrupted
// copies: each must fail cleanly or decode, never panic.
func TestTruncated(t *testing.T) {
	b, err := os.ReadFile("testdata/view_dyn13.onnx")
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for n := 0; n < len(b); n++ {
		if _, err := Decode(b[:n]); err != nil {
			failed++
		}
	}
	// Most prefixes cut a field or lose the graph's outputs.
	if failed < len(b)/2 {
		t.Errorf("only %d of %d truncated copies were refused", failed, len(b))
	}
	if _, err := Decode(b[:len(b)/2]); err == nil {
		t.Errorf("half a model decoded without error")
	}
	for i := 0; i < len(b); i += 7 {
		c := append([]byte(nil), b...)
		c[i] ^= 0xff
		if m, err := Decode(c); err == nil {
			if _, err := m.Initializers(); err != nil && !strings.Contains(err.Error(), "initializer") {
				t.Errorf("corrupt byte %d: error %v does not name the initializer", i, err)
			}
		}
	}
	if _, err := Load("testdata/no-such.onnx"); err == nil || !strings.Contains(err.Error(), "no-such.onnx") {
		t.Errorf("missing file: err = %v", err)
	}
}
