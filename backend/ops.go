package backend

import "github.com/paretonav/paretonav/backend/internal/graph"

// UnsupportedOp is one node backend cannot lower.
type UnsupportedOp = graph.UnsupportedOp

// UnsupportedError lists every node of a model that backend cannot lower.
type UnsupportedError = graph.UnsupportedError

// LimitError reports a node whose size or values are beyond what backend
// lowers (a shape too large, a value out of range), naming it.
type LimitError = graph.LimitError

// Supported reports whether backend can lower opType (default ONNX domain)
// in a model importing the given opset. Ops whose inputs are all known when
// the graph is built (shape arithmetic) may be folded even when not
// supported here; Open reports what a given model actually needs.
func Supported(opType string, opset int64) bool { return graph.Lookup(opType, opset) != nil }

// SupportedOps returns the op types backend lowers, sorted.
func SupportedOps() []string { return graph.SupportedOps() }
