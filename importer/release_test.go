package importer

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestReleaseData releases every initializer of dtypes.onnx (each element
// type, raw_data and typed fields) and checks that the model holds none
// of their values, refuses to decode them, and saves with the same
// weights the same bytes as the model that kept its values, storage forms
// included; a copy (Clone) stays released.
func TestReleaseData(t *testing.T) {
	m, err := Load("testdata/dtypes.onnx")
	must(t, err)
	old, err := m.Initializers()
	must(t, err)
	var names []string
	weights := map[string]*Tensor{}
	for name, tt := range old {
		names = append(names, name)
		weights[name] = newValues(tt)
	}
	slices.Sort(names)
	dir := t.TempDir()
	kept := filepath.Join(dir, "kept.onnx")
	must(t, Save(kept, m, weights, SaveOptions{}))

	r := m.Clone()
	held := r.InlineBytes(names)
	if held == 0 {
		t.Fatal("InlineBytes = 0 before the release")
	}
	must(t, r.ReleaseData(names))
	if got := r.InlineBytes(names); got != 0 {
		t.Errorf("InlineBytes = %d after the release, was %d", got, held)
	}
	if got := m.InlineBytes(names); got != held {
		t.Errorf("the release reached the model it was cloned from: %d bytes, was %d", got, held)
	}
	if got := r.Released(); !slices.Equal(got, names) {
		t.Errorf("Released() = %v, want %v", got, names)
	}
	if _, err := r.Initializers(); err == nil || !strings.Contains(err.Error(), "were released") {
		t.Errorf("Initializers after the release: err = %v", err)
	}
	for _, c := range []*Model{r, r.Clone()} {
		released := filepath.Join(dir, "released.onnx")
		must(t, Save(released, c, weights, SaveOptions{Force: true}))
		a, err := os.ReadFile(kept)
		must(t, err)
		b, err := os.ReadFile(released)
		must(t, err)
		if !bytes.Equal(a, b) {
			t.Errorf("saved after the release: %d bytes differ from the %d saved before it", len(b), len(a))
		}
	}

	// A released initializer without a weight is refused by name, and
	// nothing is written.
	partial := maps.Clone(weights)
	delete(partial, "float_typed")
	delete(partial, "int8_raw")
	empty := t.TempDir()
	err = Save(filepath.Join(empty, "o.onnx"), r, partial, SaveOptions{})
	for _, want := range []string{`initializer "float_typed": its values were released`, `initializer "int8_raw"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Save without two released weights: err = %v, want %q", err, want)
		}
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("files left: %v", ents)
	}
	if _, err := r.Untie([]string{"float_raw"}); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("Untie of a released initializer: err = %v", err)
	}
}

// TestReleaseDataErrors checks that unknown names are refused by name
// and release nothing, and that external data, which is not in memory,
// is left as it is.
func TestReleaseDataErrors(t *testing.T) {
	m, err := Load("testdata/view_dyn13.onnx")
	must(t, err)
	err = m.ReleaseData([]string{"fc.bias", "nope"})
	if err == nil || !strings.Contains(err.Error(), `initializer "nope": no such initializer`) {
		t.Errorf("err = %v", err)
	}
	if len(m.Released()) != 0 {
		t.Errorf("released %v despite the error", m.Released())
	}

	ext, err := Load("testdata/mlp_ext.onnx")
	must(t, err)
	var names []string
	for _, tp := range ext.Proto.Graph.Initializer {
		names = append(names, tp.GetName())
	}
	before := proto.Clone(ext.Proto)
	must(t, ext.ReleaseData(names))
	for _, tp := range ext.Proto.Graph.Initializer {
		inline := tp.GetDataLocation() != onnxpb.TensorProto_EXTERNAL
		if got := slices.Contains(ext.Released(), tp.GetName()); got != inline {
			t.Errorf("%s: released %v, inline %v", tp.GetName(), got, inline)
		}
	}
	if _, err := ext.Initializers(); err == nil {
		t.Error("the inline initializer decoded after its release")
	}
	if proto.Equal(before, ext.Proto) {
		t.Error("nothing was released")
	}
}

// TestReleaseDataFunctions checks that a model with local functions, which
// Save writes as it was decoded, saves released weights from the weights
// given.
func TestReleaseDataFunctions(t *testing.T) {
	b, err := proto.Marshal(funcModel())
	must(t, err)
	m, err := Decode(b)
	must(t, err)
	must(t, m.ReleaseData([]string{"w"}))
	if m.written.Graph.Initializer[0].RawData != nil || m.written.Graph.Initializer[0].FloatData != nil {
		t.Error("the model as written still holds w")
	}
	path := filepath.Join(t.TempDir(), "f.onnx")
	must(t, Save(path, m, map[string]*Tensor{"w": NewFloat32("w", []int{3}, []float32{4, 5, 6})}, SaveOptions{}))
	back, err := Load(path)
	must(t, err)
	inits, err := back.Initializers()
	must(t, err)
	if got := inits["w"].F32; !slices.Equal(got, []float32{4, 5, 6}) {
		t.Errorf("saved w = %v, want [4 5 6]", got)
	}
}
