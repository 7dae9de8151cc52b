// Package backend lowers ONNX graphs to Gorgonia, appends loss heads, and
// computes task losses and exact per-task gradients. It is the only package
// that imports Gorgonia; nothing of Gorgonia appears in its exported API.
package backend
