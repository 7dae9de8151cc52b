// Package graph is what an ONNX graph is lowered into and the machinery
// every lowering uses: the Builder of a Gorgonia graph for concrete input
// shapes, the Value flowing along an ONNX edge (a run-time node, a
// build-time constant or a tensor sequence), the registry of lowerings by
// op type and opset (Register, Lookup; RegisterFused for the fused
// nodes of package rewrite), the attribute and input readers, and the generic Gorgonia ops the
// lowerings build from Go closures: KernelOp (float data, with its
// gradient KernelGradOp), IntKernelOp (int64 data) and the data movements
// (Builder.Move). Build lowers a whole graph.
package graph
