#!/usr/bin/python3
"""Exports paretonav's PyTorch reference fixtures (the tolerances of backend/torch_fixtures_test.go).

Run from anywhere with the system Python, which has torch 1.13 and onnx 1.12:

    /usr/bin/python3 backend/testdata/torch/make_fixtures.py

For every model it writes, beside this script:

  NAME.onnx  the model, exported in eval mode (see "Export settings")
  NAME.npz   the reference batch and PyTorch's answers:
               input/x               the model input (float32)
               target/T              each task's target (int64 labels, float32 maps)
               output/O              PyTorch's float32 forward outputs
               ort/O                 ONNX Runtime's outputs for the same model and
                                     input (CPU, graph optimisations disabled),
                                     obtained through internal/testkit/ortcheck/runner.js
               loss/TASK             the task's mean loss (float64, 0-d)
               grad/TASK/INIT        d loss/TASK / d INIT for every trainable ONNX
                                     initializer INIT (float32, INIT's shape)
  NAME.json  tasks as paretonav takes them (NAME:LOSS:OUTPUT:TARGET[:k=v]),
             opset, input/output names and shapes, the initializer lists
             (trainable parameters and BatchNorm running statistics), the
             torch state_dict name -> ONNX initializer name mapping, notes.

Losses and gradients are computed in float64 on a double-precision copy of the
float32 model (same weights, same input), then the gradients are rounded to
float32: they are the exact answer for the float32 weights up to float32
rounding, not PyTorch's float32 round-off. The script checks that PyTorch's
float32 gradients agree with them (relative error < 1e-3 per tensor).

Loss kinds (PyTorch semantics):
  nll         mean over samples (pixels) of -logp[target]; targets equal to
              ignore_index (segmentation: -1) are left out of the mean
              (F.nll_loss(..., ignore_index=-1)).
  depth_l1    sum(|pred - t| * valid) / count(valid), valid = pixels where the
              target depth is non-zero (MTAN's depth loss).
  normal_cos  1 - sum(pred . t * valid) / count(valid), valid = pixels where the
              target normal is non-zero (MTAN's normal loss); pred and t are unit
              vectors, so this is 1 - the mean cosine over valid pixels.

Models (all fixed seeds, eval mode, dynamic batch axis "N" on the input and
every output):
  lenet2_op11 / lenet2_op13 / lenet2_op17
        The two-head LeNet of Pareto-MTL / EPO for MultiMNIST: input [N,1,36,36];
        conv 10@9x9 -> maxpool 2 -> relu; conv 20@5x5 -> maxpool 2 -> relu;
        torch.flatten -> 500 (20*5*5; the 36x36 input gives 5x5 maps, as in the
        papers' code) -> fc 50 -> relu; heads fc 50->10 + log_softmax each.
        Outputs logp_left, logp_right. Batch 4.
  lenet2_view_op13
        The same net flattened with x.view(x.size(0), -1): the export computes
        the shape at run time (Shape, Gather, Unsqueeze, Concat, Reshape).
  resnet18w8_op13
        A two-head ResNet-18: torchvision's topology (7x7/2 stem, BN, ReLU,
        3x3/2 max pool, BasicBlock x [2,2,2,2], 1x1/2 conv+BN downsample,
        global average pool) written out here (torchvision is not installed),
        with the base width reduced from 64 to 8 (widths 8,16,32,64) and a
        3x32x32 input, to keep the fixture small. Heads fc 64->10 +
        log_softmax: outputs logp_a, logp_b. Batch 4.
  mtan_op13
        A small SegNet/MTAN-style dense net: encoder conv-BN-ReLU blocks (8, 16
        channels) each followed by MaxPool 2 with return_indices, a conv-BN-ReLU
        bottleneck (32), decoder conv-BN-ReLU + MaxUnpool 2 with the encoder's
        indices; per-task attention gates sigmoid(BN(conv1x1(ReLU(BN(conv1x1(
        concat(decoder out, encoder-1 out))))))) multiplying the shared decoder
        features; heads conv3x3-ReLU-conv1x1: seg_logp (13 classes,
        log_softmax), depth (1 ch), normal (3 ch, divided by its L2 norm over
        channels). Input [N,3,32,32], batch 2.

Export settings: opset as named, do_constant_folding=False,
keep_initializers_as_inputs=False, and training=TrainingMode.PRESERVE with the
model in eval mode. TrainingMode.EVAL is NOT used: in torch 1.13 it runs the
eval peephole pass that folds BatchNormalization into the preceding Conv,
which renames the weights (onnx::Conv_NN) and removes the BN parameters, so
gradients could not be matched to initializers. PRESERVE on an eval-mode
model exports BatchNormalization in inference mode (one output, running
statistics as initializers). BatchNorm affine parameters and running
statistics are randomised: torch deduplicates initializers with equal values
(fresh BN weight and running_var are both ones), replacing one by an Identity
node, which would also break the name mapping. The script asserts that every
trainable parameter and BN buffer appears under its state_dict name.

PyTorch 1.13 cannot export aten::max_unpool2d; this script registers a
symbolic that emits ONNX MaxUnpool with the output_shape input and converts
PyTorch's per-plane indices to ONNX's flat indices by adding
(n*C + c)*H*W (Shape, Slice, ReduceProd, Range, Mul, Reshape, Add). (The
output_shape input also avoids a crash of onnx 1.12's MaxUnpool shape
inference.) PyTorch's MaxPool(return_indices) export itself subtracts the
same offsets from ONNX's flat indices.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.onnx import register_custom_op_symbolic

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
RUNNER = os.path.join(REPO, "internal", "ortcheck", "runner.js")


# ---------------------------------------------------------------- export helpers


def _const(g, value):
    return g.op("Constant", value_t=torch.tensor(value, dtype=torch.int64))


def max_unpool2d_symbolic(g, x, indices, output_size):
    """ONNX MaxUnpool for F.max_unpool2d(kernel 2, stride 2) with per-plane indices."""
    shape = g.op("Shape", x)
    nc = g.op("Slice", shape, _const(g, [0]), _const(g, [2]))
    hw = g.op("Slice", shape, _const(g, [2]), _const(g, [4]))
    planes = g.op("ReduceProd", nc, keepdims_i=0)
    plane_size = g.op("Mul", g.op("ReduceProd", hw, keepdims_i=0), _const(g, 4))
    offsets = g.op("Mul", g.op("Range", _const(g, 0), planes, _const(g, 1)), plane_size)
    offsets = g.op("Reshape", offsets, g.op("Concat", nc, _const(g, [1, 1]), axis_i=0))
    out_shape = g.op("Concat", nc, g.op("Mul", hw, _const(g, [2])), axis_i=0)
    return g.op("MaxUnpool", x, g.op("Add", indices, offsets), out_shape,
                kernel_shape_i=[2, 2], strides_i=[2, 2])


register_custom_op_symbolic("aten::max_unpool2d", max_unpool2d_symbolic, 11)


def randomise_bn(model, gen):
    """Gives every BatchNorm distinct, non-trivial affine parameters and statistics."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.weight.copy_(torch.rand(c, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(c, generator=gen) * 0.1)
                m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)


# ---------------------------------------------------------------- models


class LeNet2(nn.Module):
    """Two-head LeNet of Pareto-MTL / EPO (MultiMNIST, 36x36 input)."""

    def __init__(self, flatten="flatten"):
        super().__init__()
        self.flatten = flatten
        self.conv1 = nn.Conv2d(1, 10, 9, 1)
        self.conv2 = nn.Conv2d(10, 20, 5, 1)
        self.fc = nn.Linear(5 * 5 * 20, 50)
        self.head_left = nn.Linear(50, 10)
        self.head_right = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        if self.flatten == "view":
            x = x.view(x.size(0), -1)
        else:
            x = torch.flatten(x, 1)
        x = F.relu(self.fc(x))
        return (F.log_softmax(self.head_left(x), dim=1),
                F.log_softmax(self.head_right(x), dim=1))


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return F.relu(out + identity)


class ResNet18Two(nn.Module):
    """ResNet-18 (torchvision topology) with base width w and two heads."""

    def __init__(self, w=8, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, w, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths = [w, 2 * w, 4 * w, 8 * w]
        cin = w
        layers = []
        for i, cout in enumerate(widths):
            stride = 1 if i == 0 else 2
            layers.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.head_a = nn.Linear(8 * w, classes)
        self.head_b = nn.Linear(8 * w, classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return (F.log_softmax(self.head_a(x), dim=1),
                F.log_softmax(self.head_b(x), dim=1))


def conv_bn_relu(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU())


class Attention(nn.Module):
    """MTAN-style task attention gate: sigmoid(BN(1x1(ReLU(BN(1x1(in))))))."""

    def __init__(self, cin, c):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, c, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.sigmoid(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


class Head(nn.Module):
    def __init__(self, c, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, 1, 1)
        self.conv2 = nn.Conv2d(c, cout, 1)

    def forward(self, x):
        return self.conv2(F.relu(self.conv1(x)))


class MTANSmall(nn.Module):
    """A small SegNet/MTAN-style net: seg (13 classes), depth, surface normals."""

    def __init__(self, classes=13):
        super().__init__()
        self.enc1 = conv_bn_relu(3, 8)
        self.enc2 = conv_bn_relu(8, 16)
        self.mid = conv_bn_relu(16, 32)
        self.dec2 = conv_bn_relu(32, 16)
        self.dec1 = conv_bn_relu(16, 8)
        self.dec0 = conv_bn_relu(8, 8)
        self.pool = nn.MaxPool2d(2, 2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2, 2)
        self.att_seg = Attention(16, 8)
        self.att_depth = Attention(16, 8)
        self.att_normal = Attention(16, 8)
        self.head_seg = Head(8, classes)
        self.head_depth = Head(8, 1)
        self.head_normal = Head(8, 3)

    def forward(self, x):
        e1 = self.enc1(x)                  # 32x32
        p1, i1 = self.pool(e1)             # 16x16
        e2 = self.enc2(p1)
        p2, i2 = self.pool(e2)             # 8x8
        m = self.mid(p2)
        d2 = self.unpool(self.dec2(m), i2)  # 16x16
        d1 = self.unpool(self.dec1(d2), i1)  # 32x32
        shared = self.dec0(d1)
        cat = torch.cat([shared, e1], dim=1)
        seg = self.head_seg(self.att_seg(cat) * shared)
        depth = self.head_depth(self.att_depth(cat) * shared)
        normal = self.head_normal(self.att_normal(cat) * shared)
        normal = normal / torch.norm(normal, p=2, dim=1, keepdim=True)
        return F.log_softmax(seg, dim=1), depth, normal


# ---------------------------------------------------------------- losses


def loss_nll(pred, target):
    return F.nll_loss(pred, target, ignore_index=-1)


def loss_depth_l1(pred, target):
    valid = (torch.sum(target, dim=1, keepdim=True) != 0).to(pred.dtype)
    return torch.sum(torch.abs(pred - target) * valid) / torch.sum(valid)


def loss_normal_cos(pred, target):
    valid = (torch.sum(target, dim=1, keepdim=True) != 0).to(pred.dtype)
    return 1 - torch.sum(pred * target * valid) / torch.sum(valid)


LOSSES = {"nll": loss_nll, "depth_l1": loss_depth_l1, "normal_cos": loss_normal_cos}


# ---------------------------------------------------------------- ONNX Runtime


def ort_dir():
    d = os.environ.get("PARETONAV_ORT_DIR") or os.path.join(REPO, ".tools", "ort", "node_modules")
    return d if os.path.isdir(os.path.join(d, "onnxruntime-node")) else None


def ort_run(model_path, inputs):
    """Runs model_path in ONNX Runtime through internal/testkit/ortcheck/runner.js."""
    d = ort_dir()
    if d is None:
        print("warning: onnxruntime-node not found; ort/ arrays not written", file=sys.stderr)
        return None
    types = {np.float32: "float32", np.float64: "float64", np.int64: "int64"}
    with tempfile.TemporaryDirectory() as tmp:
        job = {"model": os.path.abspath(model_path), "optLevel": "disabled", "threads": 1,
               "inputs": []}
        for i, (name, arr) in enumerate(sorted(inputs.items())):
            f = "in_%d.bin" % i
            arr = np.ascontiguousarray(arr)
            arr.astype(arr.dtype.newbyteorder("<")).tofile(os.path.join(tmp, f))
            job["inputs"].append({"name": name, "type": types[arr.dtype.type],
                                  "shape": list(arr.shape), "file": f})
        with open(os.path.join(tmp, "job.json"), "w") as fh:
            json.dump(job, fh)
        subprocess.run(["node", RUNNER, d, tmp], check=True)
        with open(os.path.join(tmp, "result.json")) as fh:
            res = json.load(fh)
        dtypes = {"float32": "<f4", "float64": "<f8", "int64": "<i8"}
        return {o["name"]: np.fromfile(os.path.join(tmp, o["file"]),
                                       dtype=dtypes[o["type"]]).reshape(o["shape"])
                for o in res["outputs"]}


# ---------------------------------------------------------------- fixtures


def make_fixture(name, model, x, output_names, tasks, targets, opset, notes, default_export=False):
    """Exports model and writes NAME.onnx, NAME.npz, NAME.json.

    tasks: list of (task, loss kind, output name, target name, extra spec or "").
    targets: dict target name -> numpy array.
    default_export: export with torch.onnx.export's defaults (TrainingMode.EVAL,
    constant folding) instead of the settings above. Constant folding turns
    Linear weights into transposed copies (onnx::MatMul_NN), so initializers
    are matched to parameters by value (equal, or equal transposed; the
    parameters must all differ, see randomise_all) and their gradients
    transposed to match.
    """
    model.eval()
    path = os.path.join(HERE, name + ".onnx")
    dyn = {n: {0: "N"} for n in ["x"] + output_names}
    if default_export:
        torch.onnx.export(model, x, path, opset_version=opset, input_names=["x"],
                          output_names=output_names, dynamic_axes=dyn)
    else:
        torch.onnx.export(model, x, path, opset_version=opset, input_names=["x"],
                          output_names=output_names, dynamic_axes=dyn,
                          do_constant_folding=False, keep_initializers_as_inputs=False,
                          training=torch.onnx.TrainingMode.PRESERVE)
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    inits = [i.name for i in proto.graph.initializer]
    init_set = set(inits)
    ops = sorted({n.op_type for n in proto.graph.node})

    # State dict names -> initializer names: they must match one to one.
    params = dict(model.named_parameters())
    buffers = {k: v for k, v in model.named_buffers() if not k.endswith("num_batches_tracked")}
    mapping = {}
    transposed = set()
    missing = []
    values = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    for k in list(params) + list(buffers):
        if k in init_set:
            mapping[k] = k
        elif default_export:
            v = (params.get(k) if k in params else buffers[k]).detach().numpy()
            same = [n for n, a in values.items() if a.shape == v.shape and np.array_equal(a, v)]
            flip = [n for n, a in values.items() if v.ndim == 2 and a.shape == v.T.shape and np.array_equal(a, v.T)]
            if len(same) + len(flip) == 1:
                mapping[k] = (same + flip)[0]
                if flip:
                    transposed.add(k)
            else:
                missing.append(k)
        else:
            missing.append(k)
    extra = sorted(init_set - set(mapping.values()))
    if missing or extra:
        raise SystemExit("%s: state_dict/initializer mismatch: missing %s, extra %s"
                         % (name, missing, extra))
    for k, p in params.items():
        onnx_val = numpy_helper.to_array(
            next(i for i in proto.graph.initializer if i.name == mapping[k]))
        want = p.detach().numpy()
        assert np.array_equal(onnx_val, want.T if k in transposed else want), k

    # float32 forward (what ORT is compared with) and float32 gradients.
    outs32 = model(x)
    t32 = {k: torch.from_numpy(v) for k, v in targets.items()}
    out_by_name = dict(zip(output_names, outs32))
    grads32 = {}
    plist = list(params.values())
    for task, kind, out, tgt, _ in tasks:
        loss = LOSSES[kind](out_by_name[out], t32[tgt])
        g = torch.autograd.grad(loss, plist, retain_graph=True, allow_unused=True)
        grads32[task] = [torch.zeros_like(p) if gi is None else gi for p, gi in zip(plist, g)]

    # float64 losses and gradients: the reference.
    m64 = model.double()
    x64 = x.double()
    t64 = {k: (v.double() if v.is_floating_point() else v) for k, v in t32.items()}
    outs64 = dict(zip(output_names, m64(x64)))
    plist64 = list(dict(m64.named_parameters()).values())
    arrays = {"input/x": x.numpy()}
    for k, v in targets.items():
        arrays["target/" + k] = v
    for n, o in zip(output_names, outs32):
        arrays["output/" + n] = o.detach().numpy()
    losses = {}
    for task, kind, out, tgt, _ in tasks:
        loss = LOSSES[kind](outs64[out], t64[tgt])
        losses[task] = loss.item()
        arrays["loss/" + task] = np.array(loss.item(), dtype=np.float64)
        g = torch.autograd.grad(loss, plist64, retain_graph=True, allow_unused=True)
        for (k, p), gi, g32 in zip(params.items(), g, grads32[task]):
            gi = torch.zeros_like(p, dtype=torch.float64) if gi is None else gi
            ref = gi.detach().numpy()
            err = np.abs(ref - g32.numpy()).max()
            scale = max(np.abs(ref).max(), 1e-6)
            if err / scale > 1e-3:
                raise SystemExit("%s: float32/float64 gradients of %s/%s differ (%g)"
                                 % (name, task, k, err / scale))
            if k in transposed:
                ref = ref.T
            arrays["grad/%s/%s" % (task, mapping[k])] = np.ascontiguousarray(ref.astype(np.float32))
    model.float()

    ort = ort_run(path, {"x": x.numpy()})
    if ort is not None:
        for n in output_names:
            diff = np.abs(ort[n] - arrays["output/" + n]).max()
            if diff > 1e-5:
                raise SystemExit("%s: ORT and PyTorch differ on %s by %g" % (name, n, diff))
            arrays["ort/" + n] = ort[n]
    np.savez(os.path.join(HERE, name + ".npz"), **arrays)

    meta = {
        "model": name + ".onnx",
        "data": name + ".npz",
        "opset": opset,
        "torch": torch.__version__,
        "onnx": onnx.__version__,
        "input": {"name": "x", "shape": list(x.shape), "dynamic_axes": {"0": "N"}},
        "outputs": {n: list(o.shape) for n, o in zip(output_names, outs32)},
        "targets": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in targets.items()},
        "tasks": [":".join([t, k, o, g]) + (":" + extra if extra else "")
                  for t, k, o, g, extra in tasks],
        "losses": losses,
        "trainable": [i.name for i in proto.graph.initializer if i.name in {mapping[k] for k in params}],
        "buffers": [mapping[k] for k in buffers],
        "state_dict_to_onnx": mapping,
        "num_parameters": int(sum(p.numel() for p in params.values())),
        "ops": ops,
        "notes": notes,
    }
    with open(os.path.join(HERE, name + ".json"), "w") as fh:
        json.dump(meta, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print("%-18s opset %d  %7d params  ops %s" % (name, opset, meta["num_parameters"], " ".join(ops)))


def lenet_fixtures():
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.random((4, 1, 36, 36), dtype=np.float32))
    targets = {"left": rng.integers(0, 10, 4).astype(np.int64),
               "right": rng.integers(0, 10, 4).astype(np.int64)}
    tasks = [("left", "nll", "logp_left", "left", ""), ("right", "nll", "logp_right", "right", "")]
    outs = ["logp_left", "logp_right"]
    for opset in (11, 13, 17):
        torch.manual_seed(1)
        make_fixture("lenet2_op%d" % opset, LeNet2("flatten"), x, outs, tasks, targets, opset,
                     "Two-head LeNet (Pareto-MTL/EPO MultiMNIST), torch.flatten; fc input "
                     "is 500 = 20*5*5.")
    torch.manual_seed(1)
    make_fixture("lenet2_view_op13", LeNet2("view"), x, outs, tasks, targets, 13,
                 "Same weights as lenet2_op13, flattened with x.view(x.size(0), -1): the "
                 "graph computes the Reshape shape from Shape/Gather at run time.")


def resnet_fixture():
    torch.manual_seed(2)
    gen = torch.Generator().manual_seed(2)
    model = ResNet18Two(w=8)
    randomise_bn(model, gen)
    rng = np.random.default_rng(2)
    x = torch.from_numpy(rng.standard_normal((4, 3, 32, 32), dtype=np.float32))
    targets = {"a": rng.integers(0, 10, 4).astype(np.int64),
               "b": rng.integers(0, 10, 4).astype(np.int64)}
    make_fixture("resnet18w8_op13", model, x, ["logp_a", "logp_b"],
                 [("a", "nll", "logp_a", "a", ""), ("b", "nll", "logp_b", "b", "")],
                 targets, 13,
                 "Two-head ResNet-18, torchvision topology written out, base width 8 "
                 "(not 64), input 3x32x32; BatchNorm in inference mode with randomised "
                 "statistics.")


def mtan_fixture():
    torch.manual_seed(3)
    gen = torch.Generator().manual_seed(3)
    model = MTANSmall()
    randomise_bn(model, gen)
    rng = np.random.default_rng(3)
    n, h, w = 2, 32, 32
    x = torch.from_numpy(rng.standard_normal((n, 3, h, w), dtype=np.float32))
    seg = rng.integers(0, 13, (n, h, w)).astype(np.int64)
    seg[rng.random((n, h, w)) < 0.1] = -1
    depth = rng.random((n, 1, h, w), dtype=np.float32) * 5 + 0.5
    depth[rng.random((n, 1, h, w)) < 0.2] = 0
    normal = rng.standard_normal((n, 3, h, w)).astype(np.float32)
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    normal[np.broadcast_to(rng.random((n, 1, h, w)) < 0.15, normal.shape)] = 0
    targets = {"seg": seg, "depth_t": depth, "normal_t": normal.astype(np.float32)}
    make_fixture("mtan_op13", model, x, ["seg_logp", "depth", "normal"],
                 [("seg", "nll", "seg_logp", "seg", "ignore_index=-1"),
                  ("depth", "depth_l1", "depth", "depth_t", ""),
                  ("normal", "normal_cos", "normal", "normal_t", "")],
                 targets, 13,
                 "Small SegNet/MTAN-style net. seg target uses -1 for ignored pixels "
                 "(about 10%); depth_t is 0 on invalid pixels (about 20%); normal_t is "
                 "0 on invalid pixels (about 15%). MaxUnpool exported by a custom "
                 "symbolic (see make_fixtures.py).")


if __name__ == "__main__":
    torch.set_num_threads(1)
    lenet_fixtures()
    resnet_fixture()
    mtan_fixture()
