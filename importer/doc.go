// Package importer reads and writes ONNX files: protobuf decoding (bindings
// in onnxpb), validation, opset resolution, initializer decoding (inline and
// external data), constant folding, and saving a model with updated weights.
// It knows nothing of Gorgonia.
//
// Reading: Load (a file) and Decode (bytes) validate the model (Validate):
// IR versions MinIRVersion..MaxIRVersion (3..10), a default-domain opset
// MinOpset..MaxOpset (7..21), every node input defined earlier in the graph
// (subgraphs see their enclosing scopes), no value defined twice, no empty
// op_type, and declared tensor sizes matching their data before anything is
// allocated. All problems are reported together as an ErrorList. External
// data are read only from inside the model's folder. Calls of ONNX local
// functions (FunctionProto) are inlined into Model.Proto (functions.go).
//
// Constants: EvalNode computes the ops of shape and constant subgraphs on
// CPU; Fold applies it to every node whose inputs are all known at import.
//
// Writing: Save writes a model with new initializer values and nothing else
// changed (local functions and their calls as they were written), atomically, refusing to overwrite files unless told to.
package importer
