package importer

import (
	"fmt"
	"maps"
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
	// written is the model as decoded, before its local functions were
	// inlined into Proto (nil when it has none): Save writes it, so that
	// functions and their calls are kept.
	written *onnxpb.ModelProto
	// released names the initializers whose values ReleaseData dropped,
	// each with its storage form (true: raw_data; false: a typed field).
	released map[string]bool
}

// Load reads, decodes and validates the ONNX model in path (see Decode),
// and checks that every external-data initializer names a file inside the
// model's folder holding enough bytes for its declared shape. Every problem
// found is reported, as an ErrorList wrapped with the file name.
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
	if err := m.checkExternal(); err != nil {
		return nil, fmt.Errorf("importer: %s: %w", path, err)
	}
	return m, nil
}

// Decode decodes a serialized ModelProto and validates it (Validate):
// IR version, opset imports, graph structure and inline initializer sizes.
// Fields unknown to ONNX 1.12's schema are kept and written back by Save.
// Calls of local functions (ModelProto.functions) are inlined into Proto
// (see functions.go) and the result validated again; Save writes the
// functions and calls as they were.
// A model decoded from bytes has no folder, so its external data (if any)
// cannot be read.
func Decode(b []byte) (*Model, error) {
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		return nil, fmt.Errorf("not an ONNX model (protobuf decoding failed): %w", err)
	}
	if mp.Graph == nil {
		return nil, fmt.Errorf("not an ONNX model: no graph")
	}
	if err := Validate(&mp); err != nil {
		return nil, err
	}
	if len(mp.Functions) == 0 {
		return &Model{Proto: &mp}, nil
	}
	written := proto.Clone(&mp).(*onnxpb.ModelProto)
	if err := inlineFunctions(&mp); err != nil {
		return nil, fmt.Errorf("inlining local functions: %w", err)
	}
	if err := Validate(&mp); err != nil {
		return nil, fmt.Errorf("after inlining local functions: %w", err)
	}
	return &Model{Proto: &mp, written: written}, nil
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
	if _, ok := m.released[tp.GetName()]; ok {
		return nil, releasedError(tp.GetName())
	}
	if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		raw, err := readExternal(m.Dir, tp)
		if err != nil {
			return nil, fmt.Errorf("initializer %q: %w", tp.GetName(), err)
		}
		t, err := decodeWithRaw(tp, raw, true)
		if err != nil {
			return nil, fmt.Errorf("initializer %q: %w", tp.GetName(), err)
		}
		return t, nil
	}
	t, err := DecodeTensor(tp)
	if err != nil {
		return nil, fmt.Errorf("initializer %q: %w", tp.GetName(), err)
	}
	return t, nil
}

// HasExternalData reports whether any initializer of m's main graph keeps
// its data in an external file.
func (m *Model) HasExternalData() bool {
	for _, tp := range m.Proto.GetGraph().GetInitializer() {
		if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
			return true
		}
	}
	return false
}

// Clone returns a deep copy of m (its graph, and the model as written
// when Decode inlined local functions), so that the copy can be changed
// and saved independently of m.
func (m *Model) Clone() *Model {
	c := &Model{Proto: proto.Clone(m.Proto).(*onnxpb.ModelProto), Path: m.Path, Dir: m.Dir}
	if m.written != nil {
		c.written = proto.Clone(m.written).(*onnxpb.ModelProto)
	}
	if m.released != nil {
		c.released = maps.Clone(m.released)
	}
	return c
}
