// Package importer reads and writes ONNX files: protobuf decoding (bindings
// in onnxpb), validation, opset resolution, initializer decoding (inline and
// external data), constant folding, and saving a model with updated weights.
// It knows nothing of Gorgonia.
package importer
