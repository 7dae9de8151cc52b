// Package onnxops lowers the ONNX ops to the graph of package graph, one
// op family per file, each file registering its lowerings by op type and
// opset from init (graph.Register), and the fused nodes of package
// rewrite's passes (graph.RegisterFused) beside the ops they fuse. A
// lowering reads its node's attributes and input values and builds
// graph values: constants when the result is known when the graph is
// built, or nodes of graph's generic kernels and of package kernels'
// spatial ops.
package onnxops
