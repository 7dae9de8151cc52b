package importer

import (
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Model is a decoded ONNX model together with the folder it came from
// (where its external data, if any, must live).
type Model struct {
	// Proto is the decoded ModelProto, kept whole so that saving changes
	// only what was asked.
	Proto *onnxpb.ModelProto
	// Path is the file the model was read from ("" if decoded from bytes).
	Path string
	// Dir is the folder external data are resolved against.
	Dir string
}

// Load reads and decodes the ONNX model in path.
func Load(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	m, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("importer: %s: %w", path, err)
	}
	m.Path = path
	m.Dir = filepath.Dir(path)
	return m, nil
}

// Decode decodes a serialized ModelProto.
func Decode(b []byte) (*Model, error) {
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		return nil, fmt.Errorf("not an ONNX model (protobuf decoding failed): %w", err)
	}
	if mp.Graph == nil {
		return nil, fmt.Errorf("not an ONNX model: no graph")
	}
	return &Model{Proto: &mp}, nil
}

// Opset returns the opset version the model imports for domain ("" or
// "ai.onnx" for the default domain), or 0 if it imports none.
func (m *Model) Opset(domain string) int64 {
	if domain == "ai.onnx" {
		domain = ""
	}
	for _, o := range m.Proto.OpsetImport {
		d := o.GetDomain()
		if d == "ai.onnx" {
			d = ""
		}
		if d == domain {
			return o.GetVersion()
		}
	}
	return 0
}

// Initializers decodes every initializer of the main graph, by name.
func (m *Model) Initializers() (map[string]*Tensor, error) {
	out := make(map[string]*Tensor, len(m.Proto.Graph.Initializer))
	for _, tp := range m.Proto.Graph.Initializer {
		t, err := m.Initializer(tp)
		if err != nil {
			return nil, err
		}
		out[tp.GetName()] = t
	}
	return out, nil
}

// Initializer decodes one initializer of m, reading external data from
// m's folder when the tensor says so.
func (m *Model) Initializer(tp *onnxpb.TensorProto) (*Tensor, error) {
	if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		return nil, fmt.Errorf("initializer %q: external data not supported yet", tp.GetName())
	}
	return DecodeTensor(tp)
}
