// Package nodetests enumerates the ONNX node-test corpus that onnx-go
// v0.5.0 ships, decoded with paretonav's own ONNX bindings, as the
// backend's conformance suite.
//
// onnx-go stores the corpus as generated Go source in its package
// backend/testbackend/onnx: one file per case (onnx_test_*.go), whose init
// function calls testbackend.Register(opType, title, constructor), the
// constructor returning a TestCase literal with the serialized model
// (ModelB: []byte{...}) and gorgonia tensors built with
// tensor.New(tensor.WithShape(...), tensor.WithBacking([]T{...})) for the
// inputs and the expected outputs. 349 files, 348 registered (the
// registration of TestReshapeOneDim is commented out).
//
// That package cannot be linked here: it imports testify and go-spew,
// which are not in paretonav's module graph, and onnx-go's own protobuf
// types. So this package reads the corpus from the Go source in the module
// cache with go/parser and never links onnx-go: only literals are
// evaluated. Models are decoded with importer (proto package
// paretonav.onnx), and each tensor takes its element type, name and (when
// fully static) shape from the model's graph inputs and outputs; the
// gorgonia backing slice only supplies the values.
//
// Where the corpus is found: $PARETONAV_NODETESTS_DIR if set, else
// $GOMODCACHE (or `go env GOMODCACHE`) + /github.com/owulveryck/onnx-go@v0.5.0
// /backend/testbackend/onnx. `go mod download` puts it there.
package nodetests

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Module and Version identify the Go module holding the corpus.
const (
	Module  = "github.com/owulveryck/onnx-go"
	Version = "v0.5.0"
	// CorpusSubdir is the corpus folder inside the module.
	CorpusSubdir = "backend/testbackend/onnx"
	// EnvDir names the variable that overrides the corpus folder.
	EnvDir = "PARETONAV_NODETESTS_DIR"
	// Registered is the number of cases onnx-go v0.5.0 registers.
	Registered = 348
)

// ErrCorpusMissing is returned (wrapped) when the corpus folder is absent.
var ErrCorpusMissing = errors.New("nodetests: ONNX node-test corpus not found")

// Case is one ONNX node test.
type Case struct {
	// Name is onnx-go's title, e.g. "TestAbs"; OpType the operator tested.
	Name   string
	OpType string
	// File is the Go source file the case was read from.
	File string
	// ModelBytes is the serialized ModelProto; Model its decoding.
	ModelBytes []byte
	Model      *importer.Model
	// Invalid is importer.Validate's verdict on the model (nil if valid),
	// e.g. an opset older than paretonav supports: such a case counts as
	// unsupported, not failed.
	Invalid error
	// Inputs are bound, in order, to the graph inputs that are not
	// initializers; each carries its input's name. ExpectedOutputs follow
	// the graph outputs, named likewise.
	Inputs          []*importer.Tensor
	ExpectedOutputs []*importer.Tensor
}

var (
	loadOnce  sync.Once
	loadCases []*Case
	loadErr   error
)

// Load returns every registered case of the corpus, sorted by name. The
// result is parsed once per process and shared: callers must not modify
// the cases.
func Load() ([]*Case, error) {
	loadOnce.Do(func() {
		dir, err := Dir()
		if err != nil {
			loadErr = err
			return
		}
		loadCases, loadErr = LoadDir(dir)
	})
	return loadCases, loadErr
}

// Dir returns the corpus folder (see the package documentation).
func Dir() (string, error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		cache := os.Getenv("GOMODCACHE")
		if cache == "" {
			out, err := exec.Command("go", "env", "GOMODCACHE").Output()
			if err != nil {
				return "", fmt.Errorf("%w: cannot ask go for GOMODCACHE: %v", ErrCorpusMissing, err)
			}
			cache = strings.TrimSpace(string(out))
		}
		dir = filepath.Join(cache, filepath.FromSlash(Module+"@"+Version), filepath.FromSlash(CorpusSubdir))
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w in %s (run `go mod download %s` or set %s)", ErrCorpusMissing, dir, Module, EnvDir)
	}
	return dir, nil
}

// LoadDir reads every registered case from the onnx_test_*.go files in
// dir. Problems are collected and reported together.
func LoadDir(dir string) ([]*Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "onnx_test_*.go"))
	if err != nil {
		return nil, fmt.Errorf("nodetests: %w", err)
	}
	var cases []*Case
	var errs []error
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		c, err := parseFile(fset, path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if c != nil {
			cases = append(cases, c)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("%w: no registered case in %s", ErrCorpusMissing, dir)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].Name < cases[j].Name })
	return cases, nil
}

// parseFile reads one generated case; it returns nil, nil for a file
// whose registration is commented out.
func parseFile(fset *token.FileSet, path string) (*Case, error) {
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("nodetests: %w", err)
	}
	base := filepath.Base(path)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("nodetests: %s: %s", base, fmt.Sprintf(format, args...))
	}
	funcs := map[string]*ast.FuncDecl{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
			funcs[fd.Name.Name] = fd
		}
	}
	// init: testbackend.Register("Op", "Title", NewTitle)
	initFn, ok := funcs["init"]
	if !ok {
		return nil, fail("no init function")
	}
	var ctor string
	ast.Inspect(initFn.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || !isSelector(call.Fun, "testbackend", "Register") || len(call.Args) != 3 {
			return true
		}
		if id, ok := call.Args[2].(*ast.Ident); ok {
			ctor = id.Name
		}
		return false
	})
	if ctor == "" {
		return nil, nil // registration commented out
	}
	fd, ok := funcs[ctor]
	if !ok {
		return nil, fail("constructor %s not found", ctor)
	}
	var lit *ast.CompositeLit
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if u, ok := n.(*ast.UnaryExpr); ok && u.Op == token.AND {
			if cl, ok := u.X.(*ast.CompositeLit); ok && isSelector(cl.Type, "testbackend", "TestCase") {
				lit = cl
				return false
			}
		}
		return lit == nil
	})
	if lit == nil {
		return nil, fail("%s returns no &testbackend.TestCase literal", ctor)
	}
	c := &Case{File: path}
	var inputs, outputs []rawTensor
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			return nil, fail("unkeyed TestCase field")
		}
		key, _ := kv.Key.(*ast.Ident)
		if key == nil {
			return nil, fail("bad TestCase key")
		}
		switch key.Name {
		case "OpType", "Title":
			s, err := stringLit(kv.Value)
			if err != nil {
				return nil, fail("%s: %v", key.Name, err)
			}
			if key.Name == "OpType" {
				c.OpType = s
			} else {
				c.Name = s
			}
		case "ModelB":
			c.ModelBytes, err = byteSlice(kv.Value)
		case "Input":
			inputs, err = tensorList(kv.Value)
		case "ExpectedOutput":
			outputs, err = tensorList(kv.Value)
		}
		if err != nil {
			return nil, fail("%s: %v", key.Name, err)
		}
	}
	if c.Name == "" || len(c.ModelBytes) == 0 {
		return nil, fail("case without title or model")
	}
	// Decode without importer.Decode's validation: a few cases import
	// opsets older than paretonav supports; that is reported in Invalid.
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(c.ModelBytes, &mp); err != nil {
		return nil, fail("%s: model: %v", c.Name, err)
	}
	if mp.Graph == nil {
		return nil, fail("%s: model has no graph", c.Name)
	}
	c.Model = &importer.Model{Proto: &mp}
	c.Invalid = importer.Validate(&mp)
	g := c.Model.Proto.Graph
	inits := map[string]bool{}
	for _, t := range g.Initializer {
		inits[t.GetName()] = true
	}
	var graphInputs []*onnxpb.ValueInfoProto
	for _, vi := range g.Input {
		if !inits[vi.GetName()] {
			graphInputs = append(graphInputs, vi)
		}
	}
	if c.Inputs, err = bind(inputs, graphInputs); err != nil {
		return nil, fail("%s: inputs: %v", c.Name, err)
	}
	if c.ExpectedOutputs, err = bind(outputs, g.Output); err != nil {
		return nil, fail("%s: outputs: %v", c.Name, err)
	}
	return c, nil
}

// rawTensor is a gorgonia tensor literal: its shape, Go element type and
// values (floats in f, integers in i).
type rawTensor struct {
	shape []int
	goTyp string
	f     []float64
	i     []int64
}

func (r rawTensor) len() int {
	if r.f != nil {
		return len(r.f)
	}
	return len(r.i)
}

// bind turns the literal tensors into importer tensors typed, named and
// shaped after the graph's value infos.
func bind(raws []rawTensor, infos []*onnxpb.ValueInfoProto) ([]*importer.Tensor, error) {
	if len(raws) != len(infos) {
		return nil, fmt.Errorf("%d tensors for %d graph values", len(raws), len(infos))
	}
	out := make([]*importer.Tensor, len(raws))
	for k, r := range raws {
		vi := infos[k]
		tt := vi.GetType().GetTensorType()
		dt := importer.DataType(tt.GetElemType())
		if dt == 0 {
			dt = goTypes[r.goTyp]
		}
		shape := r.shape
		if s, ok := staticShape(tt.GetShape()); ok && numElements(s) == r.len() {
			shape = s
		}
		if numElements(shape) != r.len() {
			return nil, fmt.Errorf("%s: %d values for shape %v", vi.GetName(), r.len(), shape)
		}
		t := &importer.Tensor{Name: vi.GetName(), Type: dt, Shape: shape}
		vals := r.f
		if vals == nil {
			vals = make([]float64, len(r.i))
			for j, v := range r.i {
				vals[j] = float64(v)
			}
		}
		switch dt {
		case importer.Float32, importer.Float16, onnxpb.TensorProto_BFLOAT16:
			t.F32 = make([]float32, len(vals))
			for j, v := range vals {
				t.F32[j] = float32(v)
			}
		case importer.Float64:
			t.F64 = vals
		default:
			if r.i != nil {
				t.I64 = r.i
			} else {
				t.I64 = make([]int64, len(vals))
				for j, v := range vals {
					t.I64[j] = int64(v)
				}
			}
		}
		out[k] = t
	}
	return out, nil
}

// goTypes gives the element type of a gorgonia backing slice, used when
// the graph does not declare one.
var goTypes = map[string]importer.DataType{
	"float32": importer.Float32, "float64": importer.Float64,
	"int": importer.Int64, "int64": importer.Int64, "int32": importer.Int32,
	"int8": importer.Int8, "uint8": importer.Uint8, "bool": importer.Bool,
}

func staticShape(sp *onnxpb.TensorShapeProto) ([]int, bool) {
	if sp == nil {
		return nil, false
	}
	s := make([]int, len(sp.GetDim()))
	for i, d := range sp.GetDim() {
		if _, ok := d.GetValue().(*onnxpb.TensorShapeProto_Dimension_DimValue); !ok {
			return nil, false
		}
		s[i] = int(d.GetDimValue())
	}
	return s, true
}

func numElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

func stringLit(e ast.Expr) (string, error) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", errors.New("not a string literal")
	}
	return strconv.Unquote(bl.Value)
}

// byteSlice evaluates []byte{0x8, ...}.
func byteSlice(e ast.Expr) ([]byte, error) {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, errors.New("not a composite literal")
	}
	out := make([]byte, len(cl.Elts))
	for i, el := range cl.Elts {
		bl, ok := el.(*ast.BasicLit)
		if !ok || bl.Kind != token.INT {
			return nil, fmt.Errorf("element %d is not an integer literal", i)
		}
		v, err := strconv.ParseUint(bl.Value, 0, 8)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out[i] = byte(v)
	}
	return out, nil
}

// tensorList evaluates []tensor.Tensor{tensor.New(...), ...}.
func tensorList(e ast.Expr) ([]rawTensor, error) {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, errors.New("not a composite literal")
	}
	out := make([]rawTensor, 0, len(cl.Elts))
	for i, el := range cl.Elts {
		r, err := tensorNew(el)
		if err != nil {
			return nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// tensorNew evaluates tensor.New(tensor.WithShape(...), tensor.WithBacking([]T{...})).
func tensorNew(e ast.Expr) (rawTensor, error) {
	var r rawTensor
	call, ok := e.(*ast.CallExpr)
	if !ok || !isSelector(call.Fun, "tensor", "New") {
		return r, errors.New("not a tensor.New call")
	}
	haveBacking := false
	for _, a := range call.Args {
		opt, ok := a.(*ast.CallExpr)
		if !ok {
			return r, errors.New("tensor.New argument is not a call")
		}
		switch {
		case isSelector(opt.Fun, "tensor", "WithShape"):
			r.shape = make([]int, len(opt.Args))
			for i, d := range opt.Args {
				v, err := intLit(d)
				if err != nil {
					return r, fmt.Errorf("shape: %w", err)
				}
				r.shape[i] = int(v)
			}
		case isSelector(opt.Fun, "tensor", "WithBacking"):
			if len(opt.Args) != 1 {
				return r, errors.New("WithBacking takes one argument")
			}
			if err := backing(&r, opt.Args[0]); err != nil {
				return r, err
			}
			haveBacking = true
		default:
			return r, errors.New("unknown tensor.New option")
		}
	}
	if !haveBacking {
		return r, errors.New("tensor.New without backing")
	}
	if r.shape == nil {
		r.shape = []int{r.len()}
	}
	return r, nil
}

func backing(r *rawTensor, e ast.Expr) error {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return errors.New("backing is not a slice literal")
	}
	at, ok := cl.Type.(*ast.ArrayType)
	if !ok {
		return errors.New("backing is not a slice literal")
	}
	id, ok := at.Elt.(*ast.Ident)
	if !ok {
		return errors.New("backing element type is not a plain type")
	}
	r.goTyp = id.Name
	switch id.Name {
	case "float32", "float64":
		bits := 64
		if id.Name == "float32" {
			bits = 32
		}
		r.f = make([]float64, len(cl.Elts))
		for i, el := range cl.Elts {
			v, err := floatLit(el, bits)
			if err != nil {
				return fmt.Errorf("backing[%d]: %w", i, err)
			}
			r.f[i] = v
		}
	case "int", "int64", "int32", "int16", "int8", "uint8":
		r.i = make([]int64, len(cl.Elts))
		for i, el := range cl.Elts {
			v, err := intLit(el)
			if err != nil {
				return fmt.Errorf("backing[%d]: %w", i, err)
			}
			r.i[i] = v
		}
	case "bool":
		r.i = make([]int64, len(cl.Elts))
		for i, el := range cl.Elts {
			b, ok := el.(*ast.Ident)
			if !ok || (b.Name != "true" && b.Name != "false") {
				return fmt.Errorf("backing[%d]: not a bool literal", i)
			}
			if b.Name == "true" {
				r.i[i] = 1
			}
		}
	default:
		return fmt.Errorf("unsupported backing type []%s", id.Name)
	}
	return nil
}

// signedLit returns the literal and sign of e (a literal, possibly negated).
func signedLit(e ast.Expr) (*ast.BasicLit, bool, error) {
	neg := false
	for {
		u, ok := e.(*ast.UnaryExpr)
		if !ok {
			break
		}
		switch u.Op {
		case token.SUB:
			neg = !neg
		case token.ADD:
		default:
			return nil, false, fmt.Errorf("unexpected operator %s", u.Op)
		}
		e = u.X
	}
	if p, ok := e.(*ast.ParenExpr); ok {
		return signedLit(p.X)
	}
	bl, ok := e.(*ast.BasicLit)
	if !ok {
		return nil, false, errors.New("not a numeric literal")
	}
	return bl, neg, nil
}

func intLit(e ast.Expr) (int64, error) {
	bl, neg, err := signedLit(e)
	if err != nil {
		return 0, err
	}
	if bl.Kind != token.INT {
		return 0, fmt.Errorf("%s is not an integer literal", bl.Value)
	}
	lit := bl.Value
	if neg {
		lit = "-" + lit // keeps math.MinInt64 in range
	}
	return strconv.ParseInt(lit, 0, 64)
}

func floatLit(e ast.Expr, bits int) (float64, error) {
	bl, neg, err := signedLit(e)
	if err != nil {
		return 0, err
	}
	if bl.Kind != token.FLOAT && bl.Kind != token.INT {
		return 0, fmt.Errorf("%s is not a numeric literal", bl.Value)
	}
	v, err := strconv.ParseFloat(bl.Value, bits)
	if err != nil {
		return 0, err
	}
	if neg {
		v = -v
	}
	return v, nil
}
