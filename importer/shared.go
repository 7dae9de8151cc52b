package importer

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Shared initializers. PyTorch's exporter merges initializers of equal
// value (the zero biases of freshly initialised layers, say) into one
// initializer read by several nodes; training such a file ties parameters
// that were independent in the user's model. SharedInitializers finds
// them and Untie gives each consumer its own copy.

// Shared is an initializer of the main graph read by more than one node.
type Shared struct {
	Name string `json:"name"`
	// Consumers are the names of the nodes reading it, in graph order (a
	// node whose subgraphs read it counts as a consumer; a node without a
	// name is "#i", i its index, as backend names it).
	Consumers []string `json:"consumers"`
	// Readers are the nodes that use the value, looking through Identity
	// nodes (torch's exporter merges equal initializers into one read by
	// Identity nodes, whose names say nothing): Consumers with every
	// Identity replaced by the nodes reading its output, in graph order.
	Readers []string `json:"readers"`
}

// nodeLabel is n's name, or "#i" when it has none.
func nodeLabel(i int, n *onnxpb.NodeProto) string {
	if n.GetName() != "" {
		return n.GetName()
	}
	return fmt.Sprintf("#%d", i)
}

// reads reports whether node n (its inputs or, for names not defined
// inside them, its subgraphs) reads value name.
func reads(n *onnxpb.NodeProto, name string) bool {
	for _, s := range n.Input {
		if s == name {
			return true
		}
	}
	for _, a := range n.Attribute {
		graphs := a.Graphs
		if a.G != nil {
			graphs = append([]*onnxpb.GraphProto{a.G}, graphs...)
		}
		for _, g := range graphs {
			if graphReads(g, name) {
				return true
			}
		}
	}
	return false
}

// graphReads reports whether subgraph g reads the outer value name.
func graphReads(g *onnxpb.GraphProto, name string) bool {
	for _, v := range g.Input {
		if v.GetName() == name {
			return false // shadowed
		}
	}
	for _, t := range g.Initializer {
		if t.GetName() == name {
			return false
		}
	}
	for _, n := range g.Node {
		if reads(n, name) {
			return true
		}
		for _, o := range n.Output {
			if o == name {
				return false
			}
		}
	}
	for _, o := range g.Output {
		if o.GetName() == name {
			return true
		}
	}
	return false
}

// SharedInitializers returns every initializer of m's main graph read by
// more than one node, in initializer order. A read of the shape or the
// element type alone, which training leaves as they are, does not count:
// Shape and Size, and CastLike's target_type (the dynamo exporter writes
// Shape(weight) beside the Conv reading it where timm computes a
// convolution's padding from its weight, and CastLike(value, weight)
// before a clamp of the weight).
func (m *Model) SharedInitializers() []Shared {
	g := m.Proto.GetGraph()
	consumers := map[string][]string{}
	inits := map[string]bool{}
	for _, tp := range g.GetInitializer() {
		inits[tp.GetName()] = true
	}
	for i, n := range g.GetNode() {
		seen := map[string]bool{}
		note := func(s string) {
			if inits[s] && !seen[s] {
				seen[s] = true
				consumers[s] = append(consumers[s], nodeLabel(i, n))
			}
		}
		for j, s := range n.Input {
			if !metaOnly(n, j) {
				note(s)
			}
		}
		if hasSubgraph(n) {
			for name := range inits {
				if !seen[name] && reads(n, name) {
					note(name)
				}
			}
		}
	}
	var out []Shared
	for _, tp := range g.GetInitializer() {
		if c := consumers[tp.GetName()]; len(c) > 1 {
			out = append(out, Shared{Name: tp.GetName(), Consumers: c, Readers: readers(g, tp.GetName())})
		}
	}
	return out
}

// metaOnly reports whether node n reads only the shape or the element
// type of its input i: any input of ONNX Shape and Size, CastLike's
// target_type (input 1).
func metaOnly(n *onnxpb.NodeProto, i int) bool {
	if normDomain(n.GetDomain()) != "" {
		return false
	}
	switch n.GetOpType() {
	case "Shape", "Size":
		return true
	case "CastLike":
		return i == 1
	}
	return false
}

// readers returns the nodes of g reading value name, looking through
// Identity nodes, in graph order; reads of the shape or type alone
// (metaOnly) are left out.
func readers(g *onnxpb.GraphProto, name string) []string {
	follow := map[string]bool{name: true}
	var out []string
	for i, n := range g.Node {
		hit := false
		for j, s := range n.Input {
			hit = hit || (follow[s] && !metaOnly(n, j))
		}
		if !hit {
			if hasSubgraph(n) {
				for v := range follow {
					if reads(n, v) {
						out = append(out, nodeLabel(i, n))
						break
					}
				}
			}
			continue
		}
		if n.GetOpType() == "Identity" && len(n.Output) == 1 {
			follow[n.Output[0]] = true
			continue
		}
		out = append(out, nodeLabel(i, n))
	}
	return out
}

// Untie gives every node but the first that reads one of the named
// initializers its own copy of it (same type, shape and data; stored like
// the original: inline, or in the same external file), named
// "NAME.NODE" (made unique), and rewires that node (and its subgraphs) to
// it. A copy is also declared as a graph input where the original is one
// (IR < 4 models list initializers among the inputs). It returns the
// copies made per initializer. Outputs are unchanged: every consumer
// reads the same values as before. A model with local functions is saved
// afterwards in its inlined form (the functions are kept but no longer
// called), since the consumers may be nodes of a function body.
func (m *Model) Untie(names []string) (map[string][]string, error) {
	g := m.Proto.GetGraph()
	shared := map[string]Shared{}
	for _, s := range m.SharedInitializers() {
		shared[s.Name] = s
	}
	byName := map[string]*onnxpb.TensorProto{}
	for _, tp := range g.GetInitializer() {
		byName[tp.GetName()] = tp
	}
	var errs ErrorList
	for _, name := range names {
		if byName[name] == nil {
			errs.Add(fmt.Sprintf("initializer %q", name), "no such initializer in the main graph")
		} else if _, ok := m.released[name]; ok {
			errs.Add(fmt.Sprintf("initializer %q", name), "its values were released (Model.ReleaseData); untie before releasing")
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	used := map[string]bool{}
	collectNames(g, used)
	inputs := map[string]*onnxpb.ValueInfoProto{}
	for _, v := range g.Input {
		inputs[v.GetName()] = v
	}
	labels := map[string]int{}
	for i, n := range g.Node {
		labels[nodeLabel(i, n)] = i
	}
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	out := map[string][]string{}
	for _, name := range sorted {
		s, ok := shared[name]
		if !ok {
			continue
		}
		for _, c := range s.Consumers[1:] {
			n := g.Node[labels[c]]
			copyName := uniqueName(used, name+"."+strings.TrimPrefix(c, "#"))
			tp := proto.Clone(byName[name]).(*onnxpb.TensorProto)
			tp.Name = proto.String(copyName)
			g.Initializer = append(g.Initializer, tp)
			if vi := inputs[name]; vi != nil {
				v := proto.Clone(vi).(*onnxpb.ValueInfoProto)
				v.Name = proto.String(copyName)
				g.Input = append(g.Input, v)
			}
			renameReads(n, name, copyName)
			out[name] = append(out[name], copyName)
		}
	}
	if len(out) > 0 {
		m.written = nil
	}
	return out, nil
}

// collectNames marks every value and node name of g and its subgraphs.
func collectNames(g *onnxpb.GraphProto, used map[string]bool) {
	in := &inliner{used: used}
	in.collect(g)
}

// uniqueName returns base, or base_1, ... not in used, and marks it.
func uniqueName(used map[string]bool, base string) string {
	return (&inliner{used: used}).fresh(base)
}

// renameReads makes node n (and its subgraphs, where not shadowed) read
// to instead of from.
func renameReads(n *onnxpb.NodeProto, from, to string) {
	for i, s := range n.Input {
		if s == from {
			n.Input[i] = to
		}
	}
	for _, a := range n.Attribute {
		graphs := a.Graphs
		if a.G != nil {
			graphs = append([]*onnxpb.GraphProto{a.G}, graphs...)
		}
		for _, sg := range graphs {
			if graphReads(sg, from) {
				for _, sn := range sg.Node {
					renameReads(sn, from, to)
				}
				for _, o := range sg.Output {
					if o.GetName() == from {
						o.Name = proto.String(to)
					}
				}
			}
		}
	}
}
