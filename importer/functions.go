package importer

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// ONNX local functions (ModelProto.functions, FunctionProto; the
// dynamo-based PyTorch exporter writes them). Decode inlines every call of
// a local function, in the main graph and in subgraphs, recursively, so
// that the rest of paretonav sees plain ops: the call's inputs and
// outputs replace the function's formal ones, the function's internal
// values and nodes get names prefixed by the call node's name and made
// unique in the model, and attribute references (ref_attr_name) take the
// call's attribute or the function's default (attribute_proto, IR 9), and
// are dropped when neither is given. Save writes the model as it was
// written (functions and calls unchanged) with the new weights.
//
// Fields newer than our IR-8 bindings are read from the unknown fields:
// FunctionProto.attribute_proto (11) and the overloads of IR 10
// (NodeProto.overload 8, FunctionProto.overload 13).

// maxInlineDepth bounds nested function calls (a function calling itself
// would otherwise never end).
const maxInlineDepth = 64

// Field numbers of fields newer than our bindings.
const (
	fieldFuncAttributeProto protowire.Number = 11
	fieldFuncOverload       protowire.Number = 13
	fieldNodeOverload       protowire.Number = 8
)

// unknownFields returns the raw values of field num among m's unknown
// fields (the payload of each length-delimited occurrence).
func unknownFields(m proto.Message, num protowire.Number) [][]byte {
	var out [][]byte
	b := m.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return out
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, k := protowire.ConsumeBytes(b)
			if k < 0 {
				return out
			}
			out = append(out, v)
			b = b[k:]
			continue
		}
		k := protowire.ConsumeFieldValue(n, typ, b)
		if k < 0 {
			return out
		}
		b = b[k:]
	}
	return out
}

// overload returns the overload string (IR 10) of a node or function.
func overload(m proto.Message, num protowire.Number) string {
	if v := unknownFields(m, num); len(v) > 0 {
		return string(v[len(v)-1])
	}
	return ""
}

// funcKey identifies a local function: domain, name and overload.
type funcKey struct{ domain, name, overload string }

func (k funcKey) String() string {
	s := k.domain + "." + k.name
	if k.overload != "" {
		s += ":" + k.overload
	}
	return s
}

// localFunc is one FunctionProto with its decoded attribute defaults.
type localFunc struct {
	f        *onnxpb.FunctionProto
	attrs    map[string]bool                   // declared attribute names
	defaults map[string]*onnxpb.AttributeProto // attribute_proto
}

// inliner expands function calls in one model.
type inliner struct {
	funcs map[funcKey]*localFunc
	used  map[string]bool // value and node names taken in the model
	opset int64           // the model's default-domain opset
	extra map[string]int64
	errs  ErrorList
}

// HasFunctions reports whether m's file defines local functions (which
// Decode inlined).
func (m *Model) HasFunctions() bool { return len(m.Proto.GetFunctions()) > 0 }

// inlineFunctions expands every call of a local function of mp in place.
// It adds to mp's opset_import the domains that function bodies import
// and the model does not.
func inlineFunctions(mp *onnxpb.ModelProto) error {
	in := &inliner{funcs: map[funcKey]*localFunc{}, used: map[string]bool{}, extra: map[string]int64{}}
	for _, o := range mp.OpsetImport {
		if normDomain(o.GetDomain()) == "" {
			in.opset = o.GetVersion()
		}
	}
	for _, f := range mp.Functions {
		k := funcKey{normDomain(f.GetDomain()), f.GetName(), overload(f, fieldFuncOverload)}
		where := fmt.Sprintf("function %s", k)
		if _, dup := in.funcs[k]; dup {
			in.errs.Add(where, "defined twice")
			continue
		}
		lf := &localFunc{f: f, attrs: map[string]bool{}, defaults: map[string]*onnxpb.AttributeProto{}}
		for _, a := range f.Attribute {
			lf.attrs[a] = true
		}
		for _, raw := range unknownFields(f, fieldFuncAttributeProto) {
			a := &onnxpb.AttributeProto{}
			if err := proto.Unmarshal(raw, a); err != nil {
				in.errs.Add(where, "attribute_proto: %v", err)
				continue
			}
			lf.attrs[a.GetName()], lf.defaults[a.GetName()] = true, a
		}
		for _, o := range f.OpsetImport {
			d, v := normDomain(o.GetDomain()), o.GetVersion()
			if d == "" && v != in.opset {
				in.errs.Add(where, "imports default-domain opset %d but the model imports %d; functions of another opset are not supported", v, in.opset)
			} else if d != "" {
				in.extra[d] = v
			}
		}
		in.funcs[k] = lf
	}
	if err := in.errs.Err(); err != nil {
		return err
	}
	in.collect(mp.Graph)
	mp.Graph.Node = in.nodes(mp.Graph.Node, 0)
	have := map[string]bool{}
	for _, o := range mp.OpsetImport {
		have[normDomain(o.GetDomain())] = true
	}
	for d, v := range in.extra {
		if !have[d] {
			mp.OpsetImport = append(mp.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String(d), Version: proto.Int64(v)})
		}
	}
	return in.errs.Err()
}

// collect marks every name used in g and its subgraphs.
func (in *inliner) collect(g *onnxpb.GraphProto) {
	for _, v := range g.Input {
		in.used[v.GetName()] = true
	}
	for _, t := range g.Initializer {
		in.used[t.GetName()] = true
	}
	for _, n := range g.Node {
		in.used[n.GetName()] = true
		for _, o := range n.Output {
			in.used[o] = true
		}
		for _, a := range n.Attribute {
			if a.G != nil {
				in.collect(a.G)
			}
			for _, sg := range a.Graphs {
				in.collect(sg)
			}
		}
	}
}

// fresh returns base, or base_1, base_2, ... whichever is not yet used,
// and marks it used.
func (in *inliner) fresh(base string) string {
	s := base
	for i := 1; in.used[s]; i++ {
		s = base + "_" + strconv.Itoa(i)
	}
	in.used[s] = true
	return s
}

// nodes returns ns with every function call expanded (and the calls in
// their subgraphs).
func (in *inliner) nodes(ns []*onnxpb.NodeProto, depth int) []*onnxpb.NodeProto {
	out := make([]*onnxpb.NodeProto, 0, len(ns))
	for i, n := range ns {
		for _, a := range n.Attribute {
			if a.G != nil {
				a.G.Node = in.nodes(a.G.Node, depth)
			}
			for _, sg := range a.Graphs {
				sg.Node = in.nodes(sg.Node, depth)
			}
		}
		k := funcKey{normDomain(n.GetDomain()), n.GetOpType(), overload(n, fieldNodeOverload)}
		f := in.funcs[k]
		if f == nil {
			out = append(out, n)
			continue
		}
		where := nodeWhere("", i, n)
		if depth >= maxInlineDepth {
			in.errs.Add(where, "calls of local function %s nest more than %d deep (recursive function?)", k, maxInlineDepth)
			continue
		}
		body, err := in.expand(n, f)
		if err != nil {
			in.errs.Add(where, "inlining local function %s: %v", k, err)
			continue
		}
		out = append(out, in.nodes(body, depth+1)...)
	}
	return out
}

// expand returns the body of f for call, renamed.
func (in *inliner) expand(call *onnxpb.NodeProto, lf *localFunc) ([]*onnxpb.NodeProto, error) {
	f := lf.f
	if len(call.Input) > len(f.Input) {
		return nil, fmt.Errorf("the call has %d inputs, the function declares %d", len(call.Input), len(f.Input))
	}
	if len(call.Output) > len(f.Output) {
		return nil, fmt.Errorf("the call has %d outputs, the function declares %d", len(call.Output), len(f.Output))
	}
	attrs := map[string]*onnxpb.AttributeProto{}
	for name, a := range lf.defaults {
		attrs[name] = a
	}
	for _, a := range call.Attribute {
		if !lf.attrs[a.GetName()] {
			return nil, fmt.Errorf("attribute %q is not one of the function's attributes %v", a.GetName(), f.Attribute)
		}
		attrs[a.GetName()] = a
	}
	prefix := call.GetName()
	if prefix == "" {
		prefix = in.fresh(f.GetName())
	}
	rename := map[string]string{}
	for i, formal := range f.Input {
		actual := ""
		if i < len(call.Input) {
			actual = call.Input[i]
		}
		rename[formal] = actual
	}
	for i, formal := range f.Output {
		if i < len(call.Output) && call.Output[i] != "" {
			rename[formal] = call.Output[i]
		} else {
			rename[formal] = in.fresh(prefix + "/" + formal)
		}
	}
	name := func(s string) string {
		if s == "" {
			return ""
		}
		if r, ok := rename[s]; ok {
			return r
		}
		r := in.fresh(prefix + "/" + s)
		rename[s] = r
		return r
	}
	body := make([]*onnxpb.NodeProto, 0, len(f.Node))
	for j, bn := range f.Node {
		nb := proto.Clone(bn).(*onnxpb.NodeProto)
		base := bn.GetName()
		if base == "" {
			base = fmt.Sprintf("%s_%d", bn.GetOpType(), j)
		}
		nb.Name = proto.String(in.fresh(prefix + "/" + base))
		for k, s := range nb.Input {
			nb.Input[k] = name(s)
		}
		for k, s := range nb.Output {
			nb.Output[k] = name(s)
		}
		var err error
		if nb.Attribute, err = resolveAttrs(nb.Attribute, attrs, rename); err != nil {
			return nil, fmt.Errorf("node %q: %v", base, err)
		}
		body = append(body, nb)
	}
	return body, nil
}

// resolveAttrs replaces attribute references by the call's values
// (dropping those the call does not set and that have no default) and
// renames the function's values captured by subgraphs.
func resolveAttrs(as []*onnxpb.AttributeProto, call map[string]*onnxpb.AttributeProto, rename map[string]string) ([]*onnxpb.AttributeProto, error) {
	out := as[:0]
	for _, a := range as {
		if ref := a.GetRefAttrName(); ref != "" {
			v, ok := call[ref]
			if !ok {
				continue
			}
			if a.Type != nil && v.GetType() != a.GetType() {
				return nil, fmt.Errorf("attribute %q refers to %q of type %v, got %v", a.GetName(), ref, a.GetType(), v.GetType())
			}
			r := proto.Clone(v).(*onnxpb.AttributeProto)
			r.Name = proto.String(a.GetName())
			r.RefAttrName = nil
			out = append(out, r)
			continue
		}
		graphs := a.Graphs
		if a.G != nil {
			graphs = append([]*onnxpb.GraphProto{a.G}, graphs...)
		}
		for _, g := range graphs {
			if err := resolveGraph(g, call, rename); err != nil {
				return nil, fmt.Errorf("attribute %q: %v", a.GetName(), err)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// resolveGraph renames the function values a subgraph of a function body
// uses and resolves its attribute references.
func resolveGraph(g *onnxpb.GraphProto, call map[string]*onnxpb.AttributeProto, rename map[string]string) error {
	re := func(s string) string {
		if r, ok := rename[s]; ok {
			return r
		}
		return s
	}
	for _, v := range g.Output {
		v.Name = proto.String(re(v.GetName()))
	}
	for _, n := range g.Node {
		for k, s := range n.Input {
			n.Input[k] = re(s)
		}
		var err error
		if n.Attribute, err = resolveAttrs(n.Attribute, call, rename); err != nil {
			return err
		}
	}
	return nil
}
