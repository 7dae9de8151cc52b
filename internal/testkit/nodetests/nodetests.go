// Package nodetests owns the ONNX node-test corpus that backend's
// conformance suite runs: the 348 cases onnx-go v0.5.0 ships, stored in
// this repository (testdata/node) in ONNX's own node-test layout and
// decoded with paretonav's ONNX bindings.
//
// The layout is that of onnx's backend/test/data/node, one folder per case:
//
//	test_abs/model.onnx
//	test_abs/test_data_set_0/input_0.pb    (serialized TensorProto)
//	test_abs/test_data_set_0/output_0.pb
//
// The corpus is embedded into the package when it is compiled (go:embed),
// so Load needs no file, path or module cache at run time, whatever the
// working folder or build flags. LoadDir reads a corpus in the same layout
// from a folder, e.g. a newer ONNX's backend/test/data/node.
//
// testdata/README.md says where the cases come from (ONNX's node tests,
// Apache-2.0, as packaged by onnx-go, MIT) and how to regenerate them with
// the converter in internal/convert.
package nodetests

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Module and Version identify where the corpus was taken from: the Go
// module of onnx-go, which packages ONNX's node tests.
const (
	Module  = "github.com/owulveryck/onnx-go"
	Version = "v0.5.0"
	// Registered is the number of cases onnx-go v0.5.0 registers, all of
	// them in the repository's corpus.
	Registered = 348
)

// ErrCorpusMissing is returned (wrapped) by LoadDir when the folder is
// absent or holds no case.
var ErrCorpusMissing = errors.New("nodetests: ONNX node-test corpus not found")

// corpus is testdata/node, embedded.
//
//go:embed testdata/node
var corpus embed.FS

// corpusRoot is the corpus folder inside corpus.
const corpusRoot = "testdata/node"

// Case is one ONNX node test.
type Case struct {
	// Name is onnx-go's title, the folder name in camel case
	// (test_abs: "TestAbs"); OpType is the op of the model's first node,
	// the op tested.
	Name   string
	OpType string
	// Dir is the case's folder, relative to the corpus root.
	Dir string
	// ModelBytes is the serialized ModelProto; Model its decoding.
	ModelBytes []byte
	Model      *importer.Model
	// Invalid is importer.Validate's verdict on the model (nil if valid),
	// e.g. an opset older than paretonav supports: such a case counts as
	// unsupported, not failed.
	Invalid error
	// Inputs are the tensors of test_data_set_0/input_K.pb, in order, each
	// carrying the name of the graph input it is bound to;
	// ExpectedOutputs are those of output_K.pb, named after the graph
	// outputs.
	Inputs          []*importer.Tensor
	ExpectedOutputs []*importer.Tensor
}

var (
	loadOnce  sync.Once
	loadCases []*Case
	loadErr   error
)

// Load returns every case of the repository's corpus, sorted by name. The
// result is decoded once per process and shared: callers must not modify
// the cases.
func Load() ([]*Case, error) {
	loadOnce.Do(func() {
		sub, err := fs.Sub(corpus, corpusRoot)
		if err != nil {
			loadErr = fmt.Errorf("nodetests: %w", err)
			return
		}
		loadCases, loadErr = LoadFS(sub)
		if loadErr != nil {
			loadErr = fmt.Errorf("%w (embedded from %s)", loadErr, corpusRoot)
		}
	})
	return loadCases, loadErr
}

// LoadDir reads every case of the corpus in folder dir (ONNX's node-test
// layout), sorted by name.
func LoadDir(dir string) ([]*Case, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a folder", ErrCorpusMissing, dir)
	}
	cases, err := LoadFS(os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, dir)
	}
	return cases, nil
}

// LoadFS reads every case of the corpus at the root of fsys, sorted by
// name: each folder is a case and must hold model.onnx; files beside the
// folders are ignored. Problems are collected and reported together, each
// naming its file.
func LoadFS(fsys fs.FS) ([]*Case, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("nodetests: %w", err)
	}
	var cases []*Case
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		c, err := loadCase(fsys, e.Name())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cases = append(cases, c)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("%w: no case folder", ErrCorpusMissing)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].Name < cases[j].Name })
	return cases, nil
}

// loadCase reads the case in folder dir of fsys.
func loadCase(fsys fs.FS, dir string) (*Case, error) {
	modelPath := path.Join(dir, "model.onnx")
	b, err := fs.ReadFile(fsys, modelPath)
	if err != nil {
		return nil, fmt.Errorf("nodetests: case %s: %w", dir, err)
	}
	// Decode without importer.Decode's validation: a few cases import
	// opsets older than paretonav supports; that is reported in Invalid.
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		return nil, fmt.Errorf("nodetests: %s: %w", modelPath, err)
	}
	g := mp.GetGraph()
	if g == nil || len(g.GetNode()) == 0 {
		return nil, fmt.Errorf("nodetests: %s: model has no graph or no node", modelPath)
	}
	c := &Case{
		Name:       camelCase(dir),
		OpType:     g.GetNode()[0].GetOpType(),
		Dir:        dir,
		ModelBytes: b,
		Model:      &importer.Model{Proto: &mp},
		Invalid:    importer.Validate(&mp),
	}
	inits := map[string]bool{}
	for _, t := range g.GetInitializer() {
		inits[t.GetName()] = true
	}
	var graphInputs []*onnxpb.ValueInfoProto
	for _, vi := range g.GetInput() {
		if !inits[vi.GetName()] {
			graphInputs = append(graphInputs, vi)
		}
	}
	set := path.Join(dir, "test_data_set_0")
	if c.Inputs, err = readTensors(fsys, set, "input", graphInputs); err != nil {
		return nil, err
	}
	if c.ExpectedOutputs, err = readTensors(fsys, set, "output", g.GetOutput()); err != nil {
		return nil, err
	}
	if len(c.ExpectedOutputs) == 0 {
		return nil, fmt.Errorf("nodetests: %s: no output_0.pb", set)
	}
	return c, nil
}

// readTensors reads set/PREFIX_0.pb, set/PREFIX_1.pb, ... up to the first
// missing one. A tensor without a name takes that of the graph value at
// its position.
func readTensors(fsys fs.FS, set, prefix string, infos []*onnxpb.ValueInfoProto) ([]*importer.Tensor, error) {
	var out []*importer.Tensor
	for k := 0; ; k++ {
		name := path.Join(set, fmt.Sprintf("%s_%d.pb", prefix, k))
		b, err := fs.ReadFile(fsys, name)
		if errors.Is(err, fs.ErrNotExist) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("nodetests: %w", err)
		}
		var tp onnxpb.TensorProto
		if err := proto.Unmarshal(b, &tp); err != nil {
			return nil, fmt.Errorf("nodetests: %s: %w", name, err)
		}
		t, err := importer.DecodeTensor(&tp)
		if err != nil {
			return nil, fmt.Errorf("nodetests: %s: %w", name, err)
		}
		if t.Name == "" {
			if k >= len(infos) {
				return nil, fmt.Errorf("nodetests: %s: unnamed tensor, and the graph has only %d %ss", name, len(infos), prefix)
			}
			t.Name = infos[k].GetName()
		}
		out = append(out, t)
	}
}

// camelWord matches what onnx-go's generator capitalizes: the first
// letter and each character after an underscore.
var camelWord = regexp.MustCompile("(^[A-Za-z])|_([A-Za-z0-9])")

// camelCase gives onnx-go's title of an ONNX test folder, as its
// generator does: test_averagepool_2d_default becomes
// TestAveragepool2dDefault.
func camelCase(dir string) string {
	return camelWord.ReplaceAllStringFunc(dir, func(s string) string {
		return strings.ToUpper(strings.ReplaceAll(s, "_", ""))
	})
}
