package importer

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
)

// FuzzDecode feeds arbitrary bytes to Decode: it must never panic, and a
// model that decodes must survive load -> save -> load unchanged
// (proto.Equal), with its initializers decodable or refused cleanly.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"dtypes.onnx", "view_dyn11.onnx", "view_dyn13.onnx", "mlp_ext.onnx"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(marshal(f, tiny()))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		if m.HasExternalData() {
			return // no folder to read from; covered by the external tests
		}
		if _, err := m.Initializers(); err != nil {
			return
		}
		Fold(m) // must not panic; errors are fine
		out := filepath.Join(t.TempDir(), "m.onnx")
		if err := Save(out, m, nil, SaveOptions{}); err != nil {
			t.Fatalf("Save of a decoded model: %v", err)
		}
		m2, err := Load(out)
		if err != nil {
			t.Fatalf("Load of a saved model: %v", err)
		}
		if !proto.Equal(m.Proto, m2.Proto) {
			t.Fatalf("load -> save -> load changed the model")
		}
	})
}
