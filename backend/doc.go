// Package backend lowers ONNX graphs to Gorgonia, appends loss heads, and
// computes task losses and exact per-task gradients. It and the packages
// under backend/internal are the only ones that import Gorgonia; nothing
// of Gorgonia appears in its exported API.
//
// This package holds the model (Open, Model, Evaluate, Outputs, the memory
// estimate) and the executor and planner that run its compiled graphs.
// Beneath it: internal/onnxops lowers the ONNX ops, one file per family;
// internal/loss describes and builds the loss kinds; internal/rewrite fuses
// patterns before lowering; internal/graph is the builder, values and
// registry they share; internal/kernels, gemm and vmath are the kernels
// (DEVELOPING.md).
package backend
