package graph

import (
	"fmt"
	"sort"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// LowerFunc lowers one ONNX node. in holds one value per node input, nil
// for an omitted optional input (empty name). It returns one value per
// node output that is used (extra trailing outputs may be omitted).
// Lowering functions may return constants (a value with c set) when the
// result is known at build time (Shape of a node of known shape, say).
type LowerFunc func(b *Builder, n *onnxpb.NodeProto, in []*Value) ([]*Value, error)

type opEntry struct {
	minOpset int64
	lower    LowerFunc
}

// registry maps an ONNX op type (default domain) to its lowerings, sorted by
// minOpset. The lowering used for a model of opset v is the one with the
// largest minOpset <= v.
var registry = map[string][]opEntry{}

// register adds a lowering of opType valid from opset minOpset on. Op
// family files call it from init. Registering the same (opType, minOpset)
// twice panics: it is a programming error.
func Register(opType string, minOpset int64, f LowerFunc) {
	for _, e := range registry[opType] {
		if e.minOpset == minOpset {
			panic(fmt.Sprintf("backend: %s registered twice for opset %d", opType, minOpset))
		}
	}
	es := append(registry[opType], opEntry{minOpset, f})
	sort.Slice(es, func(i, j int) bool { return es[i].minOpset < es[j].minOpset })
	registry[opType] = es
}

// fusedLowerings maps the op type of a fused node (package rewrite) to
// its lowering, which lowers the node the fused one replaced where the
// fusion does not apply (Builder.LowerFallback).
var fusedLowerings = map[string]LowerFunc{}

// RegisterFused adds the lowering of the fused op type op. Op family
// files call it from init.
func RegisterFused(op string, f LowerFunc) {
	if fusedLowerings[op] != nil {
		panic(fmt.Sprintf("backend: fused %s registered twice", op))
	}
	fusedLowerings[op] = f
}

// lookup returns the lowering of opType for opset, or nil.
func Lookup(opType string, opset int64) LowerFunc {
	var f LowerFunc
	for _, e := range registry[opType] {
		if e.minOpset <= opset {
			f = e.lower
		}
	}
	return f
}

// SupportedOps returns the op types with a lowering, sorted.
func SupportedOps() []string {
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
