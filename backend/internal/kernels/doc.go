// Package kernels provides differentiable Gorgonia operations for the spatial ONNX
// op families that Gorgonia v0.9.18 lacks or gets wrong: Conv (bias, groups,
// dilations, asymmetric and automatic padding), MaxPool with indices,
// MaxUnpool, AveragePool, GlobalAveragePool, GlobalMaxPool,
// BatchNormalization (inference and training statistics), Pad and Resize.
//
// Every builder takes and returns *gorgonia.Node and works in float32 and
// float64 on NCHW tensors (3-D NCL inputs are accepted by Conv and the pools
// and lowered to height 1). Shapes are concrete at build time: build one graph
// per batch size. Each op implements gorgonia.Op, gorgonia.SDOp (symbolic
// gradients used by Grad and the TapeMachine) and gorgonia.ADOp (DoDiff for
// the LispMachine). Ops hold no execution state and never write into their
// inputs; every call allocates its result, so values stay valid after the
// machine runs again only if the machine does not reuse them (read them with
// gorgonia.Read or copy them, as everywhere in Gorgonia).
//
// Kernels use im2col with a matrix product: float32 runs
// backend/internal/gemm (packed, cache-blocked, AVX2/AVX-512 assembly
// micro-kernels, gonum's blas32 on other CPUs), float64 gonum's blas64 (so a
// C BLAS registered with blas64.Use is picked up). They split the batch
// across GOMAXPROCS goroutines. 3×3 convolutions of stride 1 and padding 1
// with at least 64 channels in and out on planes of at least 192 2×2
// tiles (all samples together) run as Winograd F(2×2, 3×3) instead
// (winograd.go: 16 matrix products on transformed tiles, 2.25× fewer
// multiplications; the transforms in backend/internal/vmath's AVX2
// kernels), in all three passes; a pass whose result holds a NaN or an
// infinity runs again through im2col, so non-finite values land where
// the direct convolution puts them. A panic inside a kernel or while building a node is returned as
// an error naming the op.
package kernels
