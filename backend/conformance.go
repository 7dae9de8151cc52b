package backend

// CONFORMANCE.md records backend's results on the ONNX node-test corpus
// (internal/testkit/nodetests), each output compared element-wise, and
// conformance_cases.go the cases not passed (NodeTestsNotPassed);
// regenerate both after adding or fixing ops.
//go:generate go test -run ^TestNodeConformance$ -count=1 . -args -conformance.write

// NodeTestsNotPassed returns the ONNX node tests of op type op
// (internal/testkit/nodetests' corpus) that backend fails or does not support,
// each as "Name (failed)" or "Name (unsupported)", as of the last go
// generate ./backend; nil when all pass or the corpus has none.
func NodeTestsNotPassed(op string) []string {
	return append([]string(nil), nodeTestsNotPassed[op]...)
}
