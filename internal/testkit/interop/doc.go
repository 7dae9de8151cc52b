// Package interop holds acceptance tests, and nothing else, for what a
// tuned model is worth to other ONNX consumers: a model trained by
// finetune and written by importer.Save must differ from its input in its
// weights (and the producer metadata) only, read back bit for bit, and run
// in ONNX Runtime with the outputs our backend computes.
package interop
