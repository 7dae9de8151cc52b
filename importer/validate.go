package importer

import (
	"fmt"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Supported IR and default-domain opset versions.
const (
	// MinIRVersion is the oldest ONNX IR version accepted (ONNX 1.0).
	MinIRVersion = 3
	// MaxIRVersion is the newest ONNX IR version accepted (ONNX 1.16/1.17).
	// Our bindings are generated from IR 8's onnx.proto: the fields IR 9
	// and 10 added (node and function overloads, function value_info,
	// metadata_props) decode as unknown fields, which Save writes back
	// unchanged; tensors of the types they added (float8, 4-bit integers)
	// are refused by DecodeTensor.
	MaxIRVersion = 10
	// MinOpset and MaxOpset bound the default-domain (ai.onnx) opset: the
	// opset of ONNX 1.16/1.17. Ops whose signature changed up to MaxOpset
	// are lowered by their newest version or refused by name (backend).
	MinOpset = 7
	MaxOpset = 21
)

// Validate checks a decoded model: its IR version, its opset imports, the
// structure of its graphs (every node input defined before use, no value
// produced twice, no empty op_type, every graph output defined), and the
// declared sizes of its inline initializers against their data. It
// returns every problem found as an ErrorList, or nil.
func Validate(mp *onnxpb.ModelProto) error {
	var errs ErrorList
	ir := mp.GetIrVersion()
	switch {
	case ir < MinIRVersion:
		errs.Add("model", "IR version %d is not supported (expected %d to %d; IR < 3 predates ONNX 1.0)", ir, MinIRVersion, MaxIRVersion)
	case ir > MaxIRVersion:
		errs.Add("model", "IR version %d is newer than supported (expected %d to %d, ONNX <= 1.17)", ir, MinIRVersion, MaxIRVersion)
	}
	domains := map[string]bool{}
	haveDefault := false
	for _, o := range mp.OpsetImport {
		d := normDomain(o.GetDomain())
		if domains[d] {
			errs.Add("model", "opset_import lists domain %q twice", o.GetDomain())
		}
		domains[d] = true
		if d == "" {
			haveDefault = true
			if v := o.GetVersion(); v < MinOpset || v > MaxOpset {
				errs.Add("model", "default-domain (ai.onnx) opset %d is not supported (expected %d to %d)", v, MinOpset, MaxOpset)
			}
		}
	}
	if !haveDefault {
		errs.Add("model", "opset_import has no default-domain (ai.onnx) entry; expected one with version %d to %d", MinOpset, MaxOpset)
	}
	if mp.Graph == nil {
		errs.Add("model", "no graph")
		return errs
	}
	v := &validator{errs: &errs, domains: domains, ir: ir}
	v.graph(mp.Graph, "graph", nil)
	return errs.Err()
}

func normDomain(d string) string {
	if d == "ai.onnx" {
		return ""
	}
	return d
}

type validator struct {
	errs    *ErrorList
	domains map[string]bool
	ir      int64
}

// nodeWhere names a node for error messages.
func nodeWhere(prefix string, i int, n *onnxpb.NodeProto) string {
	if n.GetName() != "" {
		return fmt.Sprintf("%snode %q (%s)", prefix, n.GetName(), n.GetOpType())
	}
	return fmt.Sprintf("%snode #%d (%s)", prefix, i, n.GetOpType())
}

// graph checks g; outer holds the names visible from enclosing graphs.
func (v *validator) graph(g *onnxpb.GraphProto, name string, outer map[string]string) {
	prefix := ""
	if outer != nil {
		prefix = name + ": "
	}
	// defined maps each visible value name to what defines it.
	defined := make(map[string]string, len(outer)+len(g.Input)+len(g.Initializer)+len(g.Node))
	for k, d := range outer {
		defined[k] = d
	}
	local := map[string]string{}
	define := func(where, name, what string) {
		if prev, ok := local[name]; ok {
			v.errs.Add(where, "value %q is already defined by %s", name, prev)
			return
		}
		local[name] = what
		defined[name] = what
	}
	for _, in := range g.Input {
		where := fmt.Sprintf("%sgraph input %q", prefix, in.GetName())
		if in.GetName() == "" {
			v.errs.Add(where, "empty name")
			continue
		}
		define(where, in.GetName(), "graph input")
	}
	for _, tp := range g.Initializer {
		where := fmt.Sprintf("%sinitializer %q", prefix, tp.GetName())
		if tp.GetName() == "" {
			v.errs.Add(where, "empty name")
		} else if what, ok := local[tp.GetName()]; ok && what == "graph input" {
			// An initializer may give a graph input its default value.
			local[tp.GetName()] = "graph input with initializer"
		} else {
			define(where, tp.GetName(), "initializer")
		}
		if err := checkTensorSize(tp); err != nil {
			v.errs.Add(where, "%v", err)
		}
	}
	for _, sp := range g.SparseInitializer {
		if n := sp.GetValues().GetName(); n != "" {
			define(fmt.Sprintf("%ssparse initializer %q", prefix, n), n, "sparse initializer")
		}
	}
	for i, n := range g.Node {
		where := nodeWhere(prefix, i, n)
		if n.GetOpType() == "" {
			v.errs.Add(where, "empty op_type")
		}
		if !v.domains[normDomain(n.GetDomain())] {
			v.errs.Add(where, "domain %q is not imported by opset_import", n.GetDomain())
		}
		for _, in := range n.Input {
			if in == "" { // an omitted optional input
				continue
			}
			if _, ok := defined[in]; !ok {
				v.errs.Add(where, "input %q is not produced by an earlier node, an initializer or a graph input", in)
			}
		}
		for _, a := range n.Attribute {
			if a.G != nil {
				v.graph(a.G, fmt.Sprintf("%sattribute %q", where, a.GetName()), defined)
			}
			for j, sg := range a.Graphs {
				v.graph(sg, fmt.Sprintf("%sattribute %q[%d]", where, a.GetName(), j), defined)
			}
			if a.T != nil {
				if err := checkTensorSize(a.T); err != nil {
					v.errs.Add(where, "attribute %q: %v", a.GetName(), err)
				}
			}
		}
		for _, out := range n.Output {
			if out == "" {
				continue
			}
			define(where, out, where)
		}
	}
	seen := map[string]bool{}
	for _, out := range g.Output {
		where := fmt.Sprintf("%sgraph output %q", prefix, out.GetName())
		if seen[out.GetName()] {
			v.errs.Add(where, "listed twice")
		}
		seen[out.GetName()] = true
		if _, ok := defined[out.GetName()]; !ok {
			v.errs.Add(where, "not produced by any node, initializer or graph input")
		}
	}
}

// checkTensorSize checks a tensor's declared shape and element type against
// the data it carries inline, without allocating. External data are
// checked when the model's folder is known (Load).
func checkTensorSize(tp *onnxpb.TensorProto) error {
	_, n, err := tensorShape(tp)
	if err != nil {
		return err
	}
	dt := DataType(tp.GetDataType())
	if dt == onnxpb.TensorProto_STRING {
		return nil // sized by its string_data; never a weight
	}
	size, ok := elemSize[dt]
	if !ok {
		return fmt.Errorf("unsupported element type %s", typeName(dt))
	}
	if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		return nil
	}
	if tp.RawData != nil {
		if len(tp.RawData) != n*size {
			return fmt.Errorf("raw data has %d bytes, shape %v of %v needs %d", len(tp.RawData), tp.Dims, dt, n*size)
		}
		return nil
	}
	have := typedLen(tp, dt)
	if have != n {
		return fmt.Errorf("has %d values, shape %v needs %d", have, tp.Dims, n)
	}
	return nil
}

// typedLen is the number of values in the typed field that holds dt.
func typedLen(tp *onnxpb.TensorProto, dt DataType) int {
	switch dt {
	case onnxpb.TensorProto_FLOAT:
		return len(tp.FloatData)
	case onnxpb.TensorProto_DOUBLE:
		return len(tp.DoubleData)
	case onnxpb.TensorProto_INT64:
		return len(tp.Int64Data)
	case onnxpb.TensorProto_UINT32, onnxpb.TensorProto_UINT64:
		return len(tp.Uint64Data)
	}
	return len(tp.Int32Data)
}

// newerTypes names the element types that IR versions newer than our
// bindings added, for messages.
var newerTypes = map[int32]string{
	17: "FLOAT8E4M3FN (IR 9)", 18: "FLOAT8E4M3FNUZ (IR 9)", 19: "FLOAT8E5M2 (IR 9)",
	20: "FLOAT8E5M2FNUZ (IR 9)", 21: "UINT4 (IR 10)", 22: "INT4 (IR 10)",
}

// typeName describes element type dt, naming the types newer than our
// bindings (which print them as bare numbers).
func typeName(dt DataType) string {
	if s, ok := newerTypes[int32(dt)]; ok {
		return fmt.Sprintf("%d, %s", int32(dt), s)
	}
	return dt.String()
}
