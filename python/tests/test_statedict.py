"""map_state_dict's rules, each on a model built for it."""

import os

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

from paretonav.statedict import map_state_dict, onnx_values
from conftest import need, repo_file, torchscript


def graph_model(inits, identities=()):
    """A model whose only content is the given initializers (name -> array)
    and Identity nodes (src, dst); the output reads every value."""
    nodes = [helper.make_node("Identity", [s], [d]) for s, d in identities]
    tensors = [numpy_helper.from_array(np.asarray(a), n) for n, a in inits.items()]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in list(inits) + [d for _, d in identities]]
    return helper.make_model(helper.make_graph(nodes, "g", [], outs, tensors))


def test_rules():
    rng = np.random.default_rng(0)
    w1, w2, b, rm = (rng.standard_normal(s).astype(np.float32) for s in [(4, 3), (2, 4), (4,), (4,)])
    sd = {
        "enc.0.weight": w1,        # exact
        "enc.0.bias": b,           # identity of a merged initializer
        "head.weight": w2,         # dynamo's p_ name
        "bn.running_mean": rm,     # dynamo's b_ name
        "head.bias": np.full(2, 7, np.float32),   # renamed: unique value
        "a.bias": np.zeros(3, np.float32),        # equal values, two keys: ambiguous
        "b.bias": np.zeros(3, np.float32),
        "bn.num_batches_tracked": np.array(3),    # in no graph
    }
    m = graph_model(
        {"enc.0.weight": w1, "shared": b, "p_head_weight": w2, "b_bn_running_mean": rm,
         "onnx::Gemm_12": sd["head.bias"], "onnx::Add_3": np.zeros(3, np.float32)},
        identities=[("shared", "tmp"), ("tmp", "enc.0.bias")],
    )
    mapping, unmapped = map_state_dict(m, sd)
    assert dict(mapping) == {
        "enc.0.weight": "enc.0.weight",
        "enc.0.bias": "enc.0.bias",
        "p_head_weight": "head.weight",
        "b_bn_running_mean": "bn.running_mean",
        "onnx::Gemm_12": "head.bias",
    }
    assert mapping.rule == {
        "enc.0.weight": "exact", "enc.0.bias": "identity", "p_head_weight": "dynamo",
        "b_bn_running_mean": "dynamo", "onnx::Gemm_12": "value",
    }
    assert mapping.initializer["enc.0.bias"] == "shared"
    assert unmapped == ["a.bias", "b.bias", "bn.num_batches_tracked"]
    values = onnx_values(m)
    for name, key in mapping.items():
        np.testing.assert_array_equal(values[name], sd[key])

    # Keys alone: no value rule.
    mapping, unmapped = map_state_dict(m, list(sd))
    assert "onnx::Gemm_12" not in mapping and "head.bias" in unmapped


def test_untied_copies():
    """After --untie, a merged initializer stays with its first reader (an Identity node
    standing for a merged name); the key's own layer reads the copy NAME.NODE."""
    w, c = np.zeros(2, np.float32), np.ones(2, np.float32)
    m = graph_model({"a.bias": w, "a.bias./a/Conv": c}, identities=[("a.bias", "b.bias")])
    m.graph.node.append(helper.make_node("Conv", ["x", "a.weight", "a.bias./a/Conv"], ["y"], name="/a/Conv"))
    mapping, unmapped = map_state_dict(m, ["a.bias", "b.bias"])
    assert dict(mapping) == {"a.bias./a/Conv": "a.bias", "b.bias": "b.bias"}
    assert mapping.rule == {"a.bias./a/Conv": "untied", "b.bias": "identity"}
    assert mapping.initializer["b.bias"] == "a.bias" and unmapped == []


def test_dynamo_ambiguous_names_stay_unmapped():
    # "a.b_c" and "a_b.c" both normalise to a_b_c: neither is guessed.
    w = np.ones(2, np.float32)
    m = graph_model({"p_a_b_c": w})
    mapping, unmapped = map_state_dict(m, ["a.b_c", "a_b.c"])
    assert dict(mapping) == {} and unmapped == ["a.b_c", "a_b.c"]


def test_torch_export_merged_initializers(tmp_path):
    torch = need("torch")
    nn = torch.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)      # weight == running_var == 1, bias == running_mean == 0
            self.c2 = nn.Conv2d(4, 4, 1)
            self.c3 = nn.Conv2d(4, 4, 1)
            with torch.no_grad():
                self.c2.bias.zero_()
                self.c3.bias.zero_()

        def forward(self, x):
            y = self.bn(self.c1(x))
            return self.c2(y), self.c3(y)

    m = M().eval()
    path = str(tmp_path / "m.onnx")
    torch.onnx.export(m, torch.randn(2, 3, 8, 8), path, input_names=["x"], output_names=["a", "b"],
                      opset_version=13, training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                      **torchscript(torch))
    inits = {t.name for t in onnx.load(path).graph.initializer}
    assert "c2.bias" not in inits  # the exporter merged it (else this test checks nothing)
    mapping, unmapped = map_state_dict(path, m)
    assert unmapped == ["bn.num_batches_tracked"]
    values = onnx_values(path)
    for name, key in mapping.items():
        np.testing.assert_array_equal(values[name], m.state_dict()[key].numpy())


def _torch2(name):
    return repo_file("backend", "testdata", "torch2", name)


def test_dynamo_optimizer_rewrites_are_not_mapped():
    """torch.onnx.export(dynamo=True) fused BatchNorm into the Conv and kept the Conv
    weight's name: that initializer holds another value, and no rule maps it; the
    same model exported with optimize=False maps every key by name."""
    rejected = _torch2("resnet_dynopt_op20.onnx")
    keys = ["body.conv1.0.weight", "body.conv1.1.weight", "body.conv1.1.running_var", "head_a.weight"]
    mapping, unmapped = map_state_dict(rejected, keys)
    assert dict(mapping) == {"head_a.weight": "head_a.weight"}
    assert unmapped == keys[:3]
    mapping, unmapped = map_state_dict(_torch2("resnet_dynamo_op20.onnx"), keys)
    assert dict(mapping) == {k: k for k in keys} and unmapped == []
    assert set(mapping.rule.values()) == {"exact"}


def test_dynamo_optimizer_constants_are_not_rewritten_weights():
    """The optimizer lifts Resize's constant scales of a bilinear upsampling into an initializer without
    metadata (val_8, [1, 1, 2, 2]): no weight, so not something load_weights must refuse. What it wrote
    into the Conv (BatchNorm fused into its weight and its own bias) is."""
    from paretonav.statedict import _optimizer_rewritten

    g = onnx.load(_torch2("upsample_dynopt_op20.onnx")).graph
    scales = [n.input[2] for n in g.node if n.op_type == "Resize"]
    assert scales == ["val_8"]  # else this test checks nothing
    assert _optimizer_rewritten(g, {t.name for t in g.initializer}) == {"conv1.weight", "conv1.bias"}


def test_dynamo_optimizer_folded_copies_map_back():
    """torch.onnx.export(dynamo=True)'s optimizer folds a Linear weight into its
    transpose (val_N) and ConvNeXt's layer scale into a reshaped copy (view):
    they map onto their keys (rules transposed, reshaped) and to_key_layout gives
    the key's values back. The module's values come from the same model's
    optimize=False export, where every key is an initializer by name."""
    from paretonav.statedict import to_key_layout

    for model, want in [("vit2", {"transposed": 6}), ("convnext", {"reshaped": 4}), ("deit", {"transposed": 8})]:
        sd = onnx_values(_torch2(model + "_dynamo_op20.onnx"))
        path = _torch2(model + "_dynopt_op20.onnx")
        mapping, unmapped = map_state_dict(path, sd)
        keys = [k for k in sd if "." in k and sd[k].dtype.kind == "f"]
        assert [k for k in unmapped if k in keys] == [], (model, unmapped)
        rules = {}
        for r in mapping.rule.values():
            rules[r] = rules.get(r, 0) + 1
        for r, n in want.items():
            assert rules.get(r) == n, (model, rules)
        values = onnx_values(path)
        for name, key in mapping.items():
            got = to_key_layout(mapping, name, values[name], sd[key].shape)
            np.testing.assert_array_equal(got, sd[key])
