// Package models holds reference architectures written as ONNX by our own
// code (lenet2, mtan), the paper's synthetic problems (exp2, zdt2v), and
// dataset generators (MultiMNIST and friends).
package models
