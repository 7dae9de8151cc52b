package models

import (
	"fmt"
	"strconv"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// MTAN input and output names.
const (
	MTANInput        = "x"
	MTANOutputSeg    = "seg_logp"
	MTANOutputDepth  = "depth"
	MTANOutputNormal = "normal"
)

// MTANConfig sizes the SegNet-MTAN built by MTAN. The zero value is the
// full model of lorenmt/mtan on NYUv2.
type MTANConfig struct {
	// Width is the number of channels of the first encoder level; the five
	// levels have Width·(1, 2, 4, 8, 8) channels. Default 64 (the full
	// model, 44,229,073 parameters).
	Width int
	// InputHeight and InputWidth are the input image size; both must be
	// multiples of 32 (five 2× poolings). Default 288×384.
	InputHeight, InputWidth int
	// Classes is the number of segmentation classes. Default 13.
	Classes int
	// Seed fixes the initial weights.
	Seed int64
}

func (c MTANConfig) withDefaults() MTANConfig {
	if c.Width == 0 {
		c.Width = 64
	}
	if c.InputHeight == 0 {
		c.InputHeight = 288
	}
	if c.InputWidth == 0 {
		c.InputWidth = 384
	}
	if c.Classes == 0 {
		c.Classes = 13
	}
	return c
}

// Validate reports whether c (after defaults) describes a buildable model.
func (c MTANConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Width < 1:
		return fmt.Errorf("models: MTAN width %d: want at least 1 channel", c.Width)
	case c.InputHeight < 32 || c.InputHeight%32 != 0 || c.InputWidth < 32 || c.InputWidth%32 != 0:
		return fmt.Errorf("models: MTAN input %dx%d: want height and width positive multiples of 32", c.InputHeight, c.InputWidth)
	case c.Classes < 2:
		return fmt.Errorf("models: MTAN classes %d: want at least 2", c.Classes)
	}
	return nil
}

// MTAN returns the SegNet Multi-Task Attention Network of Liu, Johns and
// Davison (CVPR 2019) as written in lorenmt/mtan (im2im_pred/
// model_segnet_mtan.py), for NYUv2's three tasks:
//
//   - a shared SegNet: five encoder levels (conv-BN-ReLU layers, 3×3,
//     then MaxPool 2 keeping its indices) and five decoder levels
//     (MaxUnpool with those indices, then conv-BN-ReLU layers);
//   - per task, attention modules: at every encoder level a mask
//     (conv1×1-BN-ReLU, conv1×1-BN-Sigmoid) of the level's first shared
//     feature, concatenated with the task's previous output, multiplies the
//     level's last shared feature; a shared conv-BN-ReLU and a MaxPool 2
//     follow. The decoder side upsamples (bilinear, align_corners), applies a
//     shared conv-BN-ReLU, and masks the shared decoder feature likewise;
//   - three heads (conv3×3, conv1×1): seg_logp [N,Classes,H,W]
//     (LogSoftmax over channels), depth [N,1,H,W], and normal [N,3,H,W]
//     divided by its L2 norm over channels (ReduceL2 + Div, no ε, exactly
//     as the reference: a zero vector gives NaN).
//
// Initializers are named as in the reference's PyTorch state dict
// (encoder_block.0.0.weight, encoder_att.2.4.1.running_var, …) and
// initialised as it does: xavier-normal conv weights, zero conv biases, BN
// scale 1, bias 0, running mean 0, running variance 1. The reference's
// extra logsigma parameter (uncertainty weighting only) is not part of the
// graph. Input x is [N,3,InputHeight,InputWidth]. MTAN panics if cfg is
// invalid (see Validate).
func MTAN(cfg MTANConfig) *onnxpb.ModelProto {
	return buildMTAN(cfg, false)
}

// MTANParams returns the number of trainable parameters of MTAN(cfg)
// without allocating them.
func MTANParams(cfg MTANConfig) int64 {
	return CountParams(buildMTAN(cfg, true))
}

// layer names the parameters of one conv or conv-BN-activation layer.
type layer struct {
	w, b     string
	k, pad   int64
	bn       [4]string // scale, bias, mean, var; empty when no BN
	hasBN    bool
	inC, out int64
}

func (b *builder) convParams(prefix string, cin, cout, k int64) layer {
	w, bias := b.weightBias(prefix, []int64{cout, cin, k, k}, initXavierNormalZeroBias)
	return layer{w: w, b: bias, k: k, pad: k / 2, inC: cin, out: cout}
}

func (b *builder) bnParams(l *layer, prefix string) {
	c := []int64{l.out}
	l.bn = [4]string{
		b.constant(prefix+".weight", c, 1),
		b.constant(prefix+".bias", c, 0),
		b.constant(prefix+".running_mean", c, 0),
		b.constant(prefix+".running_var", c, 1),
	}
	l.hasBN = true
}

// convBN declares the parameters of PyTorch's
// Sequential(Conv2d(cin, cout, k), BatchNorm2d(cout), act) named prefix.
func (b *builder) convBN(prefix string, cin, cout, k int64) layer {
	l := b.convParams(prefix+".0", cin, cout, k)
	b.bnParams(&l, prefix+".1")
	return l
}

// apply adds l's nodes to the graph: Conv, then BatchNormalization and
// act ("" for none). Value names start with hint.
func (b *builder) apply(l layer, hint, x, act string) string {
	y := b.convNode(l, hint+"/conv", x)
	if l.hasBN {
		y = b.op1("BatchNormalization", hint+"/bn", []string{y, l.bn[0], l.bn[1], l.bn[2], l.bn[3]},
			attrFloat("epsilon", BatchNormEpsilon), attrFloat("momentum", BatchNormMomentum))
	}
	if act != "" {
		y = b.op1(act, hint+"/"+act, []string{y})
	}
	return y
}

// convNode adds l's Conv node with output name out (made unique).
func (b *builder) convNode(l layer, out, x string) string {
	return b.op1("Conv", out, []string{x, l.w, l.b},
		attrInts("kernel_shape", l.k, l.k), attrInts("pads", l.pad, l.pad, l.pad, l.pad),
		attrInts("strides", 1, 1), attrInts("dilations", 1, 1), attrInt("group", 1))
}

// attLayer is the reference's att_layer: conv1×1-BN-ReLU-conv1×1-BN-Sigmoid.
type attLayer struct{ first, second layer }

func (b *builder) attParams(prefix string, c0, c1, c2 int64) attLayer {
	a := attLayer{first: b.convParams(prefix+".0", c0, c1, 1), second: b.convParams(prefix+".3", c1, c2, 1)}
	b.bnParams(&a.first, prefix+".1")
	b.bnParams(&a.second, prefix+".4")
	return a
}

func (b *builder) applyAtt(a attLayer, hint, x string) string {
	h := b.apply(a.first, hint+".0", x, "Relu")
	return b.apply(a.second, hint+".3", h, "Sigmoid")
}

func buildMTAN(cfg MTANConfig, noData bool) *onnxpb.ModelProto {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	w := int64(cfg.Width)
	f := [5]int64{w, 2 * w, 4 * w, 8 * w, 8 * w}
	H, W := int64(cfg.InputHeight), int64(cfg.InputWidth)
	const tasks = 3
	b := newBuilder("segnet_mtan", cfg.Seed, noData)
	x := b.input(MTANInput, -1, 3, H, W)
	itoa := func(i int) string { return strconv.Itoa(i) }

	// Parameters, in the reference's state-dict order.
	var encBlock, decBlock [5]layer
	encBlock[0] = b.convBN("encoder_block.0", 3, f[0], 3)
	for i := range 4 {
		encBlock[i+1] = b.convBN("encoder_block."+itoa(i+1), f[i], f[i+1], 3)
	}
	decBlock[0] = b.convBN("decoder_block.0", f[0], f[0], 3)
	for i := range 4 {
		decBlock[i+1] = b.convBN("decoder_block."+itoa(i+1), f[i+1], f[i], 3)
	}
	// conv_block_enc/dec.{0,1} are single conv layers, .{2,3,4} pairs.
	var convEnc, convDec [5][]layer
	convEnc[0] = []layer{b.convBN("conv_block_enc.0", f[0], f[0], 3)}
	convEnc[1] = []layer{b.convBN("conv_block_enc.1", f[1], f[1], 3)}
	for i := 2; i < 5; i++ {
		p := "conv_block_enc." + itoa(i)
		convEnc[i] = []layer{b.convBN(p+".0", f[i], f[i], 3), b.convBN(p+".1", f[i], f[i], 3)}
	}
	convDec[0] = []layer{b.convBN("conv_block_dec.0", f[0], f[0], 3)}
	convDec[1] = []layer{b.convBN("conv_block_dec.1", f[0], f[0], 3)}
	for i := 2; i < 5; i++ {
		p := "conv_block_dec." + itoa(i)
		convDec[i] = []layer{b.convBN(p+".0", f[i-1], f[i-1], 3), b.convBN(p+".1", f[i-1], f[i-1], 3)}
	}
	var encAtt, decAtt [tasks][5]attLayer
	for t := range tasks {
		p := "encoder_att." + itoa(t) + "."
		encAtt[t][0] = b.attParams(p+"0", f[0], f[0], f[0])
		for i := range 4 {
			encAtt[t][i+1] = b.attParams(p+itoa(i+1), 2*f[i+1], f[i+1], f[i+1])
		}
	}
	for t := range tasks {
		p := "decoder_att." + itoa(t) + "."
		decAtt[t][0] = b.attParams(p+"0", 2*f[0], f[0], f[0])
		for i := range 4 {
			decAtt[t][i+1] = b.attParams(p+itoa(i+1), f[i+1]+f[i], f[i], f[i])
		}
	}
	var encBlockAtt, decBlockAtt [5]layer
	encBlockAtt[0] = b.convBN("encoder_block_att.0", f[0], f[1], 3)
	for i := range 3 {
		encBlockAtt[i+1] = b.convBN("encoder_block_att."+itoa(i+1), f[i+1], f[i+2], 3)
	}
	encBlockAtt[4] = b.convBN("encoder_block_att.4", f[4], f[4], 3)
	decBlockAtt[0] = b.convBN("decoder_block_att.0", f[0], f[0], 3)
	for i := range 3 {
		decBlockAtt[i+1] = b.convBN("decoder_block_att."+itoa(i+1), f[i+1], f[i], 3)
	}
	decBlockAtt[4] = b.convBN("decoder_block_att.4", f[4], f[4], 3)
	var pred [tasks][2]layer
	for t, c := range []int64{int64(cfg.Classes), 1, 3} {
		p := "pred_task" + itoa(t+1)
		pred[t] = [2]layer{b.convParams(p+".0", f[0], f[0], 3), b.convParams(p+".1", f[0], c, 1)}
	}

	pool2 := []*onnxpb.AttributeProto{attInts2("kernel_shape"), attInts2("strides"), attrInts("pads", 0, 0, 0, 0)}
	// Shared encoder.
	var gEnc0, gEnc1, gPool, idx [5]string
	h := x
	for i := range 5 {
		gEnc0[i] = b.apply(encBlock[i], "encoder_block."+itoa(i), h, "Relu")
		v := gEnc0[i]
		for k, l := range convEnc[i] {
			v = b.apply(l, "conv_block_enc."+itoa(i)+"."+itoa(k), v, "Relu")
		}
		gEnc1[i] = v
		outs := b.node("MaxPool", []string{v}, []string{"down_sampling." + itoa(i), "down_sampling." + itoa(i) + "/indices"}, pool2...)
		gPool[i], idx[i] = outs[0], outs[1]
		h = gPool[i]
	}
	// Shared decoder.
	var gUp, gDec [5]string
	h = gPool[4]
	for i := range 5 {
		gUp[i] = b.op1("MaxUnpool", "up_sampling."+itoa(i), []string{h, idx[4-i]}, attInts2("kernel_shape"), attInts2("strides"))
		v := b.apply(decBlock[4-i], "decoder_block."+itoa(4-i), gUp[i], "Relu")
		for k, l := range convDec[4-i] {
			v = b.apply(l, "conv_block_dec."+itoa(4-i)+"."+itoa(k), v, "Relu")
		}
		gDec[i] = v
		h = v
	}
	// Task attention and heads.
	scales := b.constFloats("upsample_scales", 1, 1, 2, 2)
	heads := make([]string, tasks)
	for t := range tasks {
		tp := "task" + itoa(t) + "/"
		var a string
		for j := range 5 {
			in := gEnc0[j]
			if j > 0 {
				in = b.op1("Concat", tp+"encoder_att."+itoa(j)+"/cat", []string{gEnc0[j], a}, attrInt("axis", 1))
			}
			m := b.applyAtt(encAtt[t][j], tp+"encoder_att."+itoa(j), in)
			a = b.op1("Mul", tp+"encoder_att."+itoa(j)+"/mask", []string{m, gEnc1[j]})
			a = b.apply(encBlockAtt[j], tp+"encoder_block_att."+itoa(j), a, "Relu")
			a = b.op1("MaxPool", tp+"encoder_block_att."+itoa(j)+"/pool", []string{a}, pool2...)
		}
		for j := range 5 {
			up := b.op1("Resize", tp+"decoder."+itoa(j)+"/upsample", []string{a, "", scales},
				attrString("mode", "linear"), attrString("coordinate_transformation_mode", "align_corners"))
			d := b.apply(decBlockAtt[4-j], tp+"decoder_block_att."+itoa(4-j), up, "Relu")
			cat := b.op1("Concat", tp+"decoder_att."+itoa(4-j)+"/cat", []string{gUp[j], d}, attrInt("axis", 1))
			m := b.applyAtt(decAtt[t][4-j], tp+"decoder_att."+itoa(4-j), cat)
			a = b.op1("Mul", tp+"decoder_att."+itoa(4-j)+"/mask", []string{m, gDec[j]})
		}
		p := "pred_task" + itoa(t+1)
		v := b.apply(pred[t][0], p+".0", a, "")
		out := p + ".1/conv"
		if t == 1 {
			out = MTANOutputDepth // the depth head's last Conv is the output
		}
		heads[t] = b.convNode(pred[t][1], out, v)
	}
	b.node("LogSoftmax", []string{heads[0]}, []string{MTANOutputSeg}, attrInt("axis", 1))
	b.output(MTANOutputSeg, -1, int64(cfg.Classes), H, W)
	b.output(MTANOutputDepth, -1, 1, H, W)
	norm := b.op1("ReduceL2", "normal/norm", []string{heads[2]}, attrInts("axes", 1), attrInt("keepdims", 1))
	b.node("Div", []string{heads[2], norm}, []string{MTANOutputNormal})
	b.output(MTANOutputNormal, -1, 3, H, W)
	return b.model(fmt.Sprintf("SegNet-MTAN (lorenmt/mtan) width %d, input %dx%d, %d classes, written by paretonav.",
		cfg.Width, cfg.InputHeight, cfg.InputWidth, cfg.Classes))
}

// attInts2 is the attribute name = [2, 2].
func attInts2(name string) *onnxpb.AttributeProto { return attrInts(name, 2, 2) }
