package importer

import (
	"fmt"
	"github.com/paretonav/paretonav/internal/atomicfile"
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
func Load(path string) (*Model, error) { return LoadWithin(path, Budget{}) }

// Budget is the memory a load may use: Bytes (0: no bound) and where
// that bound comes from (a flag, the machine), for errors.
type Budget struct {
	Bytes int64
	From  string
}

// MemoryError reports data that would not fit in a Budget, found before
// any of it is read.
type MemoryError struct {
	What   string // "model file m.onnx", "initializer \"w\" (external data \"w.bin\")"
	Need   int64
	Budget Budget
}

// Error says what needs how much, and the budget.
func (e *MemoryError) Error() string {
	return fmt.Sprintf("%s needs %s, more than the %s allowed (%s)", e.What, fmtBytes(e.Need), fmtBytes(e.Budget.Bytes), e.Budget.From)
}

// fmtBytes writes n bytes in GB (MB below 1 GB), decimal units.
func fmtBytes(n int64) string {
	if n < 1e6 {
		return fmt.Sprintf("%d bytes", n)
	}
	if n < 1e9 {
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}

// MaxModelFile is the largest model file Load reads: protobuf messages
// are limited to 2 GiB (larger models keep their weights in external
// data).
const MaxModelFile = 2 << 30

// LoadWithin is Load within a memory budget. Before reading anything it
// checks that path is a regular file (not a device such as /dev/zero, a
// FIFO or a folder) of at most MaxModelFile bytes and of at most b.Bytes;
// after decoding, that the model file and its external data together
// fit in b.Bytes. The errors (*MemoryError) name the file or the largest
// initializer and the sizes.
func LoadWithin(path string, b Budget) (*Model, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("importer: %s is not a regular file (a %s); want an .onnx model file", path, atomicfile.Kind(st.Mode()))
	}
	if st.Size() > MaxModelFile {
		return nil, fmt.Errorf("importer: %s holds %s; an ONNX model file holds at most 2 GiB (protobuf's limit): larger models keep their weights in external data", path, fmtBytes(st.Size()))
	}
	if b.Bytes > 0 && st.Size() > b.Bytes {
		return nil, fmt.Errorf("importer: %w", &MemoryError{What: "model file " + path, Need: st.Size(), Budget: b})
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	m, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("importer: %s: %w", path, err)
	}
	m.Path = path
	m.Dir = filepath.Dir(path)
	ext, err := m.checkExternal()
	if err != nil {
		return nil, fmt.Errorf("importer: %s: %w", path, err)
	}
	if b.Bytes > 0 && st.Size()+ext.total > b.Bytes {
		return nil, fmt.Errorf("importer: %s: %w", path, &MemoryError{
			What: fmt.Sprintf("the model (%s in the file, %s of external data; the largest, initializer %q in %q, %s)",
				fmtBytes(st.Size()), fmtBytes(ext.total), ext.largest, ext.largestFile, fmtBytes(ext.largestBytes)),
			Need: st.Size() + ext.total, Budget: b})
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
