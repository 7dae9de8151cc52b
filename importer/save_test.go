package importer

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestSaveUnchanged saves inline models with no new weights and checks
// that the decoded result equals the original message exactly.
func TestSaveUnchanged(t *testing.T) {
	for _, name := range []string{"dtypes.onnx", "view_dyn11.onnx", "view_dyn13.onnx"} {
		t.Run(name, func(t *testing.T) {
			m, err := Load(filepath.Join("testdata", name))
			must(t, err)
			out := filepath.Join(t.TempDir(), "out.onnx")
			must(t, Save(out, m, nil, SaveOptions{}))
			m2, err := Load(out)
			must(t, err)
			if !proto.Equal(m.Proto, m2.Proto) {
				t.Errorf("saved model differs from the original")
			}
			if _, err := os.Stat(out + ".data"); !os.IsNotExist(err) {
				t.Errorf("an inline model got a data file (%v)", err)
			}
		})
	}
}

// withoutExternalRefs clears the external_data entries (and the location
// flag) of every initializer: what Save may rewrite when it moves data.
func withoutExternalRefs(mp *onnxpb.ModelProto) *onnxpb.ModelProto {
	c := proto.Clone(mp).(*onnxpb.ModelProto)
	for _, tp := range c.Graph.Initializer {
		tp.ExternalData = nil
		tp.DataLocation = nil
		tp.RawData = nil
	}
	return c
}

// TestSaveExternal saves the external-data fixture elsewhere: weights go
// to OUT.data at 4096-aligned offsets, everything else is unchanged, and
// the weights read back bit for bit. With InlineData they move inline.
func TestSaveExternal(t *testing.T) {
	m, err := Load("testdata/mlp_ext.onnx")
	must(t, err)
	want, err := m.Initializers()
	must(t, err)
	for _, inline := range []bool{false, true} {
		t.Run("inline="+strconv.FormatBool(inline), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "tuned.onnx")
			must(t, Save(out, m, nil, SaveOptions{InlineData: inline}))
			m2, err := Load(out)
			must(t, err)
			got, err := m2.Initializers()
			must(t, err)
			for name, w := range want {
				if !sameBits(got[name], w) {
					t.Errorf("%s differs after saving", name)
				}
			}
			if !proto.Equal(withoutExternalRefs(m.Proto), withoutExternalRefs(m2.Proto)) {
				t.Errorf("saved model differs beyond its external data references")
			}
			_, statErr := os.Stat(filepath.Join(dir, "tuned.onnx.data"))
			if inline {
				if m2.HasExternalData() || statErr == nil {
					t.Errorf("InlineData left external data")
				}
				return
			}
			must(t, statErr)
			for i, tp := range m2.Proto.Graph.Initializer {
				if tp.GetDataLocation() != m.Proto.Graph.Initializer[i].GetDataLocation() {
					t.Errorf("%s: data location %v, was %v", tp.GetName(), tp.GetDataLocation(), m.Proto.Graph.Initializer[i].GetDataLocation())
				}
				if tp.GetDataLocation() != onnxpb.TensorProto_EXTERNAL {
					continue
				}
				r, err := parseExternal(tp)
				must(t, err)
				if r.location != "tuned.onnx.data" || r.offset%4096 != 0 {
					t.Errorf("%s: location %q offset %d, want tuned.onnx.data at a multiple of 4096", tp.GetName(), r.location, r.offset)
				}
			}
		})
	}
}

// newValues returns a copy of t with every value changed (bit patterns
// that still fit t's element type).
func newValues(t *Tensor) *Tensor {
	c := cloneTensor(t)
	for i := range c.F32 {
		setFloat(c, i, float64(c.F32[i]*-0.5+1.25)) // rounded to float16/bfloat16
	}
	for i := range c.F64 {
		c.F64[i] = c.F64[i]/3 + 1
	}
	for i := range c.I64 {
		c.I64[i] = wrapInt(c.I64[i]+int64(i)+1, c.Type)
	}
	return c
}

// TestSaveWeights replaces every initializer of dtypes.onnx and checks
// that loading the saved model gives the new values bit for bit, in the
// same element types and storage forms (raw or typed).
func TestSaveWeights(t *testing.T) {
	m, err := Load("testdata/dtypes.onnx")
	must(t, err)
	old, err := m.Initializers()
	must(t, err)
	weights := map[string]*Tensor{}
	for name, tt := range old {
		weights[name] = newValues(tt)
	}
	out := filepath.Join(t.TempDir(), "w.onnx")
	must(t, Save(out, m, weights, SaveOptions{}))
	m2, err := Load(out)
	must(t, err)
	got, err := m2.Initializers()
	must(t, err)
	for name, w := range weights {
		if sameBits(got[name], old[name]) {
			t.Errorf("%s: unchanged", name)
		}
		if !sameBits(got[name], w) {
			t.Errorf("%s: read back %v %v %v, want %v %v %v", name, got[name].F32, got[name].F64, got[name].I64, w.F32, w.F64, w.I64)
		}
	}
	for i, tp := range m2.Proto.Graph.Initializer {
		orig := m.Proto.Graph.Initializer[i]
		if tp.GetDataType() != orig.GetDataType() || (tp.RawData != nil) != (orig.RawData != nil) {
			t.Errorf("%s: type %v raw %v, was %v raw %v", tp.GetName(), tp.GetDataType(), tp.RawData != nil, orig.GetDataType(), orig.RawData != nil)
		}
	}
	// A float32 tensor is accepted for a float16 initializer and rounded.
	w := NewFloat32("float16_raw", []int{2, 2}, []float32{1 + 1.0/4096, 2, 3, 4})
	must(t, Save(out, m, map[string]*Tensor{"float16_raw": w}, SaveOptions{Force: true}))
	m3, err := Load(out)
	must(t, err)
	h, err := m3.Initializer(m3.Proto.Graph.Initializer[4])
	must(t, err)
	if h.Name != "float16_raw" || h.Type != Float16 || h.F32[0] != 1 || h.F32[3] != 4 {
		t.Errorf("float16_raw = %v %v, want FLOAT16 [1 2 3 4]", h.Type, h.F32)
	}
}

// TestSaveWeightErrors checks that bad weights are refused, named, and
// that nothing is written.
func TestSaveWeightErrors(t *testing.T) {
	m, err := Load("testdata/view_dyn13.onnx")
	must(t, err)
	cases := []struct {
		desc string
		w    map[string]*Tensor
		want []string
	}{
		{"unknown", map[string]*Tensor{"nope": f32([]int{1}, 1)}, []string{`weight "nope": the model has no initializer of that name`}},
		{"shape", map[string]*Tensor{"fc.bias": f32([]int{4}, 1, 2, 3, 4)}, []string{`weight "fc.bias": shape [4], the initializer has shape [3]`}},
		{"dtype", map[string]*Tensor{"fc.bias": i64([]int{3}, 1, 2, 3)}, []string{`weight "fc.bias": element type INT64, the initializer holds FLOAT`}},
		{"storage", map[string]*Tensor{"fc.bias": {Type: Float32, Shape: []int{3}, F64: []float64{1, 2, 3}}}, []string{`weight "fc.bias": element type FLOAT needs float32 values`}},
		{"length", map[string]*Tensor{"fc.bias": {Type: Float32, Shape: []int{3}, F32: []float32{1}}}, []string{`weight "fc.bias": has 1 values, shape [3] needs 3`}},
		{"nil", map[string]*Tensor{"fc.bias": nil}, []string{`weight "fc.bias": nil tensor`}},
		{"two", map[string]*Tensor{"fc.bias": nil, "x": nil}, []string{`"fc.bias"`, `weight "x": the model has no initializer`}},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			dir := t.TempDir()
			err := Save(filepath.Join(dir, "o.onnx"), m, c.w, SaveOptions{})
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want %q", err, w)
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("files left: %v", ents)
			}
		})
	}
}

func listDir(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// TestSaveDestination checks the overwrite rules and unwritable
// destinations: each failure names the file and leaves no partial file.
func TestSaveDestination(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.onnx")
	b, err := os.ReadFile("testdata/view_dyn13.onnx")
	must(t, err)
	must(t, os.WriteFile(in, b, 0o644))
	m, err := Load(in)
	must(t, err)
	existing := filepath.Join(dir, "existing.onnx")
	must(t, os.WriteFile(existing, []byte("old"), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "adir"), 0o755))
	cases := []struct {
		desc  string
		path  string
		force bool
		want  string
	}{
		{"input model", in, false, "in.onnx: is the input model; paretonav never overwrites an input"},
		{"input model, forced", in, true, "in.onnx: is the input model; paretonav never overwrites an input"},
		{"existing", existing, false, "existing.onnx: file exists; refusing to overwrite it (use --force)"},
		{"directory", filepath.Join(dir, "adir"), true, "adir: is a directory"},
		{"parent is a file", filepath.Join(existing, "x.onnx"), true, "not a directory"},
		{"no parent", filepath.Join(dir, "missing", "x.onnx"), true, "cannot write " + filepath.Join(dir, "missing", "x.onnx")},
	}
	before := listDir(t, dir)
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			err := Save(c.path, m, nil, SaveOptions{Force: c.force})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
			if got := listDir(t, dir); strings.Join(got, ",") != strings.Join(before, ",") {
				t.Errorf("folder changed: %v, was %v", got, before)
			}
		})
	}
	if old, _ := os.ReadFile(existing); string(old) != "old" {
		t.Errorf("existing file changed")
	}
	// With Force an existing file that is not an input is overwritten.
	must(t, Save(existing, m, nil, SaveOptions{Force: true}))
	if _, err := Load(existing); err != nil {
		t.Errorf("forced overwrite: %v", err)
	}
	if got := listDir(t, dir); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Errorf("temporary files left: %v", got)
	}
}

// TestSaveReadOnlyFolder needs a user that permissions apply to (not root).
func TestSaveReadOnlyFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores folder permissions")
	}
	m, err := Load("testdata/view_dyn13.onnx")
	must(t, err)
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o555))
	defer os.Chmod(dir, 0o755)
	err = Save(filepath.Join(dir, "o.onnx"), m, nil, SaveOptions{})
	if err == nil || !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), "o.onnx") {
		t.Errorf("err = %v", err)
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("files left: %v", got)
	}
}

// TestSaveDataFileExists checks that an existing data file is not
// overwritten without Force.
func TestSaveDataFileExists(t *testing.T) {
	m, err := Load("testdata/mlp_ext.onnx")
	must(t, err)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "o.onnx.data"), []byte("x"), 0o644))
	err = Save(filepath.Join(dir, "o.onnx"), m, nil, SaveOptions{})
	if err == nil || !strings.Contains(err.Error(), "o.onnx.data: file exists") {
		t.Errorf("err = %v", err)
	}
	if got := listDir(t, dir); strings.Join(got, ",") != "o.onnx.data" {
		t.Errorf("folder holds %v", got)
	}
	must(t, Save(filepath.Join(dir, "o.onnx"), m, nil, SaveOptions{Force: true}))
}

// TestSaveProducer checks metadata_props: entries added, existing keys
// replaced, the rest untouched.
func TestSaveProducer(t *testing.T) {
	m, err := Load("testdata/mlp_ext.onnx")
	must(t, err)
	out := filepath.Join(t.TempDir(), "p.onnx")
	must(t, Save(out, m, nil, SaveOptions{Producer: map[string]string{"paretonav": `{"version":"x"}`, "task": "seg"}}))
	m2, err := Load(out)
	must(t, err)
	got := map[string]string{}
	var keys []string
	for _, e := range m2.Proto.MetadataProps {
		got[e.GetKey()] = e.GetValue()
		keys = append(keys, e.GetKey())
	}
	if strings.Join(keys, ",") != "author,task,paretonav" || got["task"] != "seg" || got["author"] != "importer tests" || got["paretonav"] != `{"version":"x"}` {
		t.Errorf("metadata_props = %v (%v)", got, keys)
	}
	if m2.Proto.GetDocString() != "fixture for external data" || m2.Proto.Graph.Node[1].GetDocString() != "first layer" {
		t.Errorf("doc strings lost")
	}
}

// TestSaveLarge lowers the protobuf limit: a model that would exceed it is
// saved with external data, or refused with InlineData.
func TestSaveLarge(t *testing.T) {
	defer func(v int) { maxProtoSize = v }(maxProtoSize)
	maxProtoSize = 2000
	mp := tiny()
	big := make([]float32, 1000)
	for i := range big {
		big[i] = float32(i)
	}
	mp.Graph.Initializer = append(mp.Graph.Initializer, mkInit(NewFloat32("big", []int{1000}, big)))
	m := &Model{Proto: mp}
	dir := t.TempDir()
	err := Save(filepath.Join(dir, "inline.onnx"), m, nil, SaveOptions{InlineData: true})
	if err == nil || !strings.Contains(err.Error(), "more than protobuf's limit") || !strings.Contains(err.Error(), "--inline-data") {
		t.Errorf("InlineData: err = %v", err)
	}
	out := filepath.Join(dir, "ext.onnx")
	must(t, Save(out, m, nil, SaveOptions{}))
	m2, err := Load(out)
	must(t, err)
	ext := map[string]bool{}
	for _, tp := range m2.Proto.Graph.Initializer {
		ext[tp.GetName()] = tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL
	}
	if !ext["big"] || ext["w"] || ext["s"] {
		t.Errorf("external: %v, want only big", ext)
	}
	got, err := m2.Initializers()
	must(t, err)
	if got["big"].F32[999] != 999 {
		t.Errorf("big[999] = %v", got["big"].F32[999])
	}
}

// TestSaveUnknownFields checks that fields unknown to our schema survive.
func TestSaveUnknownFields(t *testing.T) {
	mp := tiny()
	var extra []byte
	extra = protowire.AppendTag(extra, 999, protowire.BytesType)
	extra = protowire.AppendString(extra, "from the future")
	mp.ProtoReflect().SetUnknown(extra)
	mp.Graph.Node[0].ProtoReflect().SetUnknown(extra)
	m, err := Decode(marshal(t, mp))
	must(t, err)
	out := filepath.Join(t.TempDir(), "u.onnx")
	must(t, Save(out, m, map[string]*Tensor{"w": f32([]int{2, 3}, 6, 5, 4, 3, 2, 1)}, SaveOptions{}))
	m2, err := Load(out)
	must(t, err)
	if string(m2.Proto.ProtoReflect().GetUnknown()) != string(extra) || string(m2.Proto.Graph.Node[0].ProtoReflect().GetUnknown()) != string(extra) {
		t.Errorf("unknown fields lost")
	}
	if w, _ := m2.Initializer(m2.Proto.Graph.Initializer[0]); w.F32[0] != 6 || math.Float32bits(w.F32[5]) != math.Float32bits(1) {
		t.Errorf("w = %v", w.F32)
	}
}

// copyExternal copies testdata/mlp_ext.onnx and its data file into a new
// folder and returns the folder and the loaded model.
func copyExternal(t *testing.T) (string, *Model) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"mlp_ext.onnx", "mlp_ext.onnx.data"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	m, err := Load(filepath.Join(dir, "mlp_ext.onnx"))
	must(t, err)
	return dir, m
}

// TestSaveNeverOverwritesItsInput: the model's own file and its external
// data file are inputs, refused as destinations with or without force,
// whether named directly, through a link, or as the data file another
// output would write; nothing in the folder changes.
func TestSaveNeverOverwritesItsInput(t *testing.T) {
	dir, m := copyExternal(t)
	data := filepath.Join(dir, "mlp_ext.onnx.data")
	must(t, os.Symlink("mlp_ext.onnx.data", filepath.Join(dir, "link.onnx")))
	// A model saved as x.onnx writes x.onnx.data: a link of that name to
	// the input's data file.
	must(t, os.Symlink("mlp_ext.onnx.data", filepath.Join(dir, "other.onnx.data")))
	before, err := os.ReadFile(data)
	must(t, err)
	for _, force := range []bool{false, true} {
		for _, c := range []struct{ path, want string }{
			{filepath.Join(dir, "mlp_ext.onnx"), "is the input model;"},
			{data, "is the input model's external data file mlp_ext.onnx.data"},
			{filepath.Join(dir, "link.onnx"), "is the input model's external data file"},
			{filepath.Join(dir, "other.onnx"), "is the input model's external data file"},
		} {
			err := Save(c.path, m, nil, SaveOptions{Force: force})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Save(%s, force %v) = %v, want %q", filepath.Base(c.path), force, err, c.want)
			}
		}
	}
	after, err := os.ReadFile(data)
	must(t, err)
	if !bytes.Equal(before, after) {
		t.Errorf("the input's data file changed")
	}
	if got := strings.Join(listDir(t, dir), ","); got != "link.onnx,mlp_ext.onnx,mlp_ext.onnx.data,other.onnx.data" {
		t.Errorf("folder holds %s", got)
	}
}

// TestSaveThroughLink: a destination that is a symbolic link is written
// through to the file it names (the link stays a link); a link into /dev
// or to a missing file is refused.
func TestSaveThroughLink(t *testing.T) {
	dir, m := copyExternal(t)
	real := filepath.Join(dir, "sub", "real.onnx")
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(t, os.WriteFile(real, []byte("old"), 0o644))
	link := filepath.Join(dir, "out.onnx")
	must(t, os.Symlink(real, link))
	must(t, Save(link, m, nil, SaveOptions{Force: true}))
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi, err)
	}
	if _, err := Load(real); err != nil {
		t.Errorf("the link's target does not hold the model: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "real.onnx.data")); err != nil {
		t.Errorf("the data file is not beside the link's target: %v", err)
	}
	must(t, os.Symlink("/dev/null", filepath.Join(dir, "null.onnx")))
	must(t, os.Symlink("missing.onnx", filepath.Join(dir, "dangling.onnx")))
	for name, want := range map[string]string{"null.onnx": "a link into /dev or /proc", "dangling.onnx": "a link to a missing file"} {
		if err := Save(filepath.Join(dir, name), m, nil, SaveOptions{Force: true}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Save(%s) = %v, want %q", name, err, want)
		}
	}
}

// TestReadMetadata reads back what Save wrote into metadata_props, and
// refuses a file that is not a model.
func TestReadMetadata(t *testing.T) {
	dir, m := copyExternal(t)
	out := filepath.Join(dir, "o.onnx")
	must(t, Save(out, m, nil, SaveOptions{Producer: map[string]string{"paretonav": `{"run":"abc"}`, "k": "v"}}))
	got, err := ReadMetadata(out)
	must(t, err)
	if got["paretonav"] != `{"run":"abc"}` || got["k"] != "v" {
		t.Errorf("metadata %v", got)
	}
	if _, err := ReadMetadata(filepath.Join(dir, "mlp_ext.onnx.data")); err == nil || !strings.Contains(err.Error(), "not an ONNX model") {
		t.Errorf("a data file: %v", err)
	}
}

// TestReadMetadataSeeksOverGraph: metadata after a graph larger than the
// read buffer is found (the graph sought over), and a file cut inside the
// graph is refused.
func TestReadMetadataSeeksOverGraph(t *testing.T) {
	mp := &onnxpb.ModelProto{
		IrVersion: proto.Int64(8),
		Graph:     &onnxpb.GraphProto{Name: proto.String("g"), DocString: proto.String(strings.Repeat("w", 1<<20))},
		MetadataProps: []*onnxpb.StringStringEntryProto{
			{Key: proto.String("paretonav"), Value: proto.String(`{"run":"r1"}`)},
		},
	}
	b, err := proto.Marshal(mp)
	must(t, err)
	dir := t.TempDir()
	path := filepath.Join(dir, "big.onnx")
	must(t, os.WriteFile(path, b, 0o644))
	got, err := ReadMetadata(path)
	must(t, err)
	if got["paretonav"] != `{"run":"r1"}` {
		t.Errorf("metadata %v", got)
	}
	cut := filepath.Join(dir, "cut.onnx")
	must(t, os.WriteFile(cut, b[:len(b)/2], 0o644))
	if _, err := ReadMetadata(cut); err == nil || !strings.Contains(err.Error(), "not an ONNX model") {
		t.Errorf("a cut file: %v", err)
	}
}

// TestLooksLikeModel: models written by Save and by exporters start as
// a model; a weights file, text and an empty file do not.
func TestLooksLikeModel(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, b, 0o644))
		return p
	}
	for _, c := range []struct {
		path string
		want bool
	}{
		{"testdata/mlp_ext.onnx", true},
		{"testdata/dtypes.onnx", true},
		{"testdata/mlp_ext.onnx.data", false},
		{write("log.jsonl", []byte(`{"kind":"config"}`)), false},
		{write("empty", nil), false},
		{filepath.Join(dir, "missing"), false},
	} {
		if got := LooksLikeModel(c.path); got != c.want {
			t.Errorf("LooksLikeModel(%s) = %v, want %v", c.path, got, c.want)
		}
	}
}
