package models

import "github.com/paretonav/paretonav/importer/onnxpb"

// LeNet2 input and output names.
const (
	LeNet2Input       = "x"
	LeNet2OutputLeft  = "logp_left"
	LeNet2OutputRight = "logp_right"
)

// LeNet2 returns the two-headed LeNet that Pareto MTL (Lin et al. 2019),
// EPO and PNG train on MultiMNIST, with PyTorch's default initialisation
// drawn from seed:
//
//	x [N,1,36,36]
//	conv1  Conv 1→10, 9×9        → [N,10,28,28]  MaxPool 2 → Relu → [N,10,14,14]
//	conv2  Conv 10→20, 5×5       → [N,20,10,10]  MaxPool 2 → Relu → [N,20,5,5]
//	Flatten                      → [N,500]
//	fc1    Gemm 500→50 → Relu
//	head_left, head_right  Gemm 50→10 → LogSoftmax(axis 1)
//	outputs logp_left, logp_right [N,10]
//
// Max pooling and ReLU commute, so this equals the reference's
// conv→relu→pool order. Initializers are named as in a PyTorch state dict
// (conv1.weight, conv1.bias, …, head_left.weight, head_right.bias); the
// model has 31,910 parameters.
func LeNet2(seed int64) *onnxpb.ModelProto {
	b := newBuilder("lenet2", seed, false)
	const k = initTorchDefault
	x := b.input(LeNet2Input, -1, 1, 36, 36)
	pool := func(prefix, v string) string {
		return b.op1("MaxPool", prefix+"/pool", []string{v},
			attrInts("kernel_shape", 2, 2), attrInts("strides", 2, 2), attrInts("pads", 0, 0, 0, 0))
	}
	h := b.conv("conv1", x, 1, 10, 9, 0, k)
	h = b.op1("Relu", "conv1/relu", []string{pool("conv1", h)})
	h = b.conv("conv2", h, 10, 20, 5, 0, k)
	h = b.op1("Relu", "conv2/relu", []string{pool("conv2", h)})
	h = b.op1("Flatten", "flatten", []string{h}, attrInt("axis", 1))
	h = b.op1("Relu", "fc1/relu", []string{b.gemm("fc1", h, 500, 50, k)})
	for _, head := range []struct{ name, out string }{{"head_left", LeNet2OutputLeft}, {"head_right", LeNet2OutputRight}} {
		logits := b.gemm(head.name, h, 50, 10, k)
		b.node("LogSoftmax", []string{logits}, []string{head.out}, attrInt("axis", 1))
		b.output(head.out, -1, 10)
	}
	return b.model("Two-headed LeNet for MultiMNIST (Pareto MTL / EPO / PNG), written by paretonav.")
}
