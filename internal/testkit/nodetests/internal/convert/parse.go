package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// srcCase is one case read from onnx-go's generated Go source.
type srcCase struct {
	// dir is the ONNX node-test folder the case came from (test_abs for
	// onnx_test_abs.go); name and opType are onnx-go's title and op type.
	dir, name, opType string
	// file is the Go source file.
	file       string
	modelBytes []byte
	// inputs and outputs are typed, named and shaped after the model's
	// graph inputs (initializers excluded) and outputs.
	inputs, outputs []*importer.Tensor
}

// parseDir reads every registered case from the onnx_test_*.go files in
// dir, sorted by folder name. Problems are collected and reported
// together.
func parseDir(dir string) ([]*srcCase, error) {
	files, err := filepath.Glob(filepath.Join(dir, "onnx_test_*.go"))
	if err != nil {
		return nil, err
	}
	var cases []*srcCase
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
		return nil, fmt.Errorf("no registered case (onnx_test_*.go) in %s", dir)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].dir < cases[j].dir })
	return cases, nil
}

// parseFile reads one generated case; it returns nil, nil for a file
// whose registration is commented out.
func parseFile(fset *token.FileSet, path string) (*srcCase, error) {
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	base := filepath.Base(path)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
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
	// onnx-go names the file onnx_<folder>.go after the ONNX test folder.
	c := &srcCase{file: path, dir: strings.TrimSuffix(strings.TrimPrefix(base, "onnx_"), ".go")}
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
				c.opType = s
			} else {
				c.name = s
			}
		case "ModelB":
			c.modelBytes, err = byteSlice(kv.Value)
		case "Input":
			inputs, err = tensorList(kv.Value)
		case "ExpectedOutput":
			outputs, err = tensorList(kv.Value)
		}
		if err != nil {
			return nil, fail("%s: %v", key.Name, err)
		}
	}
	if c.name == "" || len(c.modelBytes) == 0 {
		return nil, fail("case without title or model")
	}
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(c.modelBytes, &mp); err != nil {
		return nil, fail("%s: model: %v", c.name, err)
	}
	g := mp.GetGraph()
	if g == nil {
		return nil, fail("%s: model has no graph", c.name)
	}
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
	if c.inputs, err = bind(inputs, graphInputs); err != nil {
		return nil, fail("%s: inputs: %v", c.name, err)
	}
	if c.outputs, err = bind(outputs, g.Output); err != nil {
		return nil, fail("%s: outputs: %v", c.name, err)
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
