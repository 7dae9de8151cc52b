package backend

// CONFORMANCE.md records backend's results on the ONNX node-test corpus
// (internal/nodetests), each output compared element-wise; regenerate it
// after adding or fixing ops.
//go:generate go test -run ^TestNodeConformance$ -count=1 . -args -conformance.write
