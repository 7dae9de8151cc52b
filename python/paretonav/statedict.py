"""Which ONNX initializer holds which PyTorch state_dict entry.

:func:`map_state_dict` matches the initializers of an exported model to the
keys of the module's ``state_dict``, by these rules, in this order; each rule
only sees what the rules before it left unmatched:

1. ``exact``: the initializer is named like the key. PyTorch's TorchScript
   exporter (1.x, and 2.x without ``dynamo=True``) names parameters and
   buffers by their state_dict key; so does the dynamo exporter from 2.5 on.
   ``untied``: except where that initializer is read only by Identity nodes
   and exactly one initializer named ``KEY.<node>`` of the same shape is read
   by another node: that copy is what the key's own layer reads.
   paretonav's ``--untie`` leaves the original to the first reader (in
   PyTorch 1.13's graphs, the Identity nodes standing for merged names) and
   gives each later reader a copy named ``NAME.NODE``.
   Not where the dynamo exporter's optimizer rewrote the initializer (no
   rule maps it): in a file whose initializers carry torch.export's
   ``InputSpec.kind`` metadata, one named like a key with neither that nor
   onnxscript's ``folded_from`` holds another value, as when ``dynamo=True``
   (``optimize=True``, the default) fuses BatchNorm into the Conv before it
   and keeps the Conv weight's name; the BatchNorm's keys stay unmapped too.
   Nor the initializers of a node whose metadata says onnxscript's
   rewriter fused a BatchNorm into it (``rule_name`` FuseBatchNormIntoConv
   and the like), in any file: that is all that is left of the metadata
   when ``opset_version`` < 18 made the exporter convert the file down.
2. ``identity``: an ``Identity`` node (or a chain of them) reading an
   initializer writes a value named like the key. PyTorch 1.13 merges
   initializers of equal value (fresh zero biases, a BatchNorm's ones) into one
   and keeps the other names as Identity outputs; paretonav's ``--untie``
   keeps those Identity nodes and gives each its own copy.
3. ``dynamo``: the names ``torch.export`` gives lifted parameters, buffers and
   constants (``p_``, ``b_``, ``c_`` prefixes; dynamo's ``l__self___`` /
   ``L__self___`` module prefixes; dots written as underscores), matched
   only where exactly one key and one initializer share the normalised name.
4. ``value``: the initializer has the same dtype, shape and bytes as exactly
   one key's tensor, and that tensor as exactly one initializer (PyTorch
   1.13 renames the weights it folds or duplicates, ``onnx::Conv_123``).
   Needs tensors: a module or a state_dict, not bare keys.

5. ``transposed`` / ``reshaped``: ``torch.onnx.export(..., dynamo=True)``'s
   optimizer folded the key's tensor alone into a new initializer
   (``val_14``: a Linear weight transposed for MatMul; ``view``: a layer
   scale reshaped), as its ``folded_from`` metadata says, and the values
   agree, or, in a tuned file whose values no longer do, the file's
   metadata says so: the node reading it was ``aten.linear`` of the key
   (``pkg.torch.onnx.fx_node``), or it only adds or drops axes of size 1
   and is a view (``view_N``) or the key is the weight or bias of the
   ``aten.group_norm`` the reading node computes (GroupNorm's affine
   parameters reshaped to [C, 1, 1]), or the reading node computes an
   ``aten.addcmul`` with its default value 1 and the copy was folded from
   the key through views and that 1 alone (ConvNeXtV2's
   GlobalResponseNorm weight). :func:`to_key_layout` turns such an
   initializer's value back into the key's layout. Needs tensors.

The mapping's keys are ONNX value names that hold constant data: initializer
names, and for rule 2 the Identity output's name. ``mapping.rule[name]`` says
which rule matched and ``mapping.initializer[name]`` the initializer that
holds the data. ``unmapped`` lists the state_dict keys no rule matched, in
state_dict order (``num_batches_tracked`` counters, which no exported graph
reads, among them).
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Collection, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

import numpy as np

from ._types import PathArg

if TYPE_CHECKING:
    import onnx
    import torch

#: What map_state_dict and onnx_values read: a loaded ONNX model or a file's path.
OnnxModel = Union["onnx.ModelProto", PathArg]

#: What map_state_dict maps to: a module, a state_dict (key -> tensor or
#: array) or the keys alone.
StateDictLike = Union["torch.nn.Module", Mapping[str, Any], Iterable[str]]

#: An ONNX ValueInfoProto or NodeProto: the protos that carry metadata_props.
_WithMetadata = Union["onnx.ValueInfoProto", "onnx.NodeProto"]

__all__ = ["StateDictMapping", "map_state_dict", "onnx_values", "to_key_layout"]


class StateDictMapping(dict):
    """``dict[onnx_name, state_dict_key]`` with, per ONNX name, the rule that
    matched it (``rule``) and the initializer holding its data (``initializer``)."""

    def __init__(self) -> None:
        super().__init__()
        self.rule: Dict[str, str] = {}
        self.initializer: Dict[str, str] = {}

    def _add(self, onnx_name: str, key: str, rule: str, init: str) -> None:
        self[onnx_name] = key
        self.rule[onnx_name] = rule
        self.initializer[onnx_name] = init


def _load_model(onnx_model_or_path: OnnxModel) -> "onnx.ModelProto":
    import onnx

    if isinstance(onnx_model_or_path, (str, os.PathLike)):
        return onnx.load(os.fspath(onnx_model_or_path))
    if isinstance(onnx_model_or_path, onnx.ModelProto):
        return onnx_model_or_path
    raise TypeError(
        "map_state_dict: expected an onnx.ModelProto or the path of an ONNX file, got %s"
        % type(onnx_model_or_path).__name__
    )


def _identity_aliases(graph: "onnx.GraphProto", init_names: Collection[str]) -> Dict[str, str]:
    """Value name -> initializer name, for Identity outputs of initializers."""
    source = {n: n for n in init_names}
    changed = True
    nodes = [n for n in graph.node if n.op_type == "Identity" and len(n.input) == 1 and len(n.output) == 1]
    while changed:  # chains of Identity nodes, in any node order
        changed = False
        for n in nodes:
            if n.input[0] in source and n.output[0] not in source:
                source[n.output[0]] = source[n.input[0]]
                changed = True
    return {v: s for v, s in source.items() if v not in init_names}


def onnx_values(onnx_model_or_path: OnnxModel) -> Dict[str, np.ndarray]:
    """The constant values of a model's main graph as numpy arrays: every
    initializer, and every Identity output computed from one (the names that
    :func:`map_state_dict`'s mapping uses)."""
    from onnx import numpy_helper

    model = _load_model(onnx_model_or_path)
    g = model.graph
    values = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for alias, init in _identity_aliases(g, set(values)).items():
        values[alias] = values[init]
    return values


_TORCH_KIND = "pkg.torch.export.graph_signature.InputSpec.kind"
_FOLDED_FROM = "pkg.onnxscript.optimizer.folded_from"


_RULE_NAME = "pkg.onnxscript.rewriter.rule_name"


def _fused_batchnorm(graph: "onnx.GraphProto", init_names: Collection[str]) -> Set[str]:
    """Initializers read by a node that onnxscript's rewriter made by fusing
    a BatchNorm into it (its metadata's rule_name FuseBatchNormIntoConv,
    ...IntoConvTranspose, ...IntoGemm): the weight holds W·γ/σ under W's
    name, the bias (b − μ)·γ/σ + β. The node's metadata survives where the
    initializers' does not: torch.onnx.export(dynamo=True) at an
    opset_version below 18 exports at 18 and converts the file down,
    dropping the value_info metadata."""
    out: Set[str] = set()
    for n in graph.node:
        if _metadata(n, 9).get(_RULE_NAME, "").startswith("FuseBatchNormInto"):
            out.update(i for i in n.input if i in init_names)
    return out


def _optimizer_rewritten(graph: "onnx.GraphProto", init_names: Collection[str]) -> Set[str]:
    """Initializers of a dynamo export (its initializers' value_info carry
    InputSpec.kind) that a Conv reads as its weight or bias and whose
    value_info carries neither InputSpec.kind nor folded_from: values the
    onnxscript optimizer wrote itself (a Conv weight with BatchNorm fused
    in, under the weight's name, and the fused bias); and, in any file, the
    initializers of nodes its rewriter fused a BatchNorm into. The same
    rule as the binary's (importer.Model.OptimizerRewritten)."""
    fused = _fused_batchnorm(graph, init_names)
    meta = {}
    for v in list(graph.input) + list(graph.value_info):
        if v.name in init_names:
            meta[v.name] = _metadata_keys(v)
    if not any(_TORCH_KIND in m for m in meta.values()):
        return fused
    # Only float tensors that a Conv reads as its weight or bias: the
    # optimizer also lifts constants of the forward code into initializers
    # without metadata (a Reshape's shape, a scale, Resize's scales of a
    # bilinear upsampling), which hold no parameter.
    conv = {i for n in graph.node if n.op_type == "Conv" and n.domain in ("", "ai.onnx") for i in n.input[1:3]}
    weights = {t.name for t in graph.initializer if t.data_type in _FLOAT_TYPES and len(t.dims) > 0 and t.name in conv}
    return fused | {n for n in init_names
                    if n in weights and not (meta.get(n, set()) & {_TORCH_KIND, _FOLDED_FROM})}


_FLOAT_TYPES = {1, 10, 11, 16}  # TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16


def _metadata_keys(value_info: _WithMetadata) -> Set[str]:
    """The metadata_props keys of a ValueInfoProto."""
    return set(_metadata(value_info))


def _metadata(value_info: _WithMetadata, field: int = 4) -> Dict[str, str]:
    """The metadata_props of a ValueInfoProto (field 4, onnx 1.16+) or a
    NodeProto (field 9), read from its bytes where the installed onnx
    predates the field."""
    if "metadata_props" in value_info.DESCRIPTOR.fields_by_name:
        return {p.key: p.value for p in value_info.metadata_props}
    b, i, keys = value_info.SerializeToString(), 0, {}
    while i < len(b):
        tag, i = _varint_at(b, i)
        wire = tag & 7
        if wire == 0:
            _, i = _varint_at(b, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = _varint_at(b, i)
            if tag >> 3 == field:  # StringStringEntryProto: key = 1, value = 2
                e, j, kv = b[i:i + n], 0, {}
                while j < len(e):
                    t, j = _varint_at(e, j)
                    m, j = _varint_at(e, j)
                    kv[t >> 3] = e[j:j + m].decode("utf-8", "replace")
                    j += m
                keys[kv.get(1, "")] = kv.get(2, "")
            i += n
        else:
            break
    return keys


def _varint_at(b: bytes, i: int) -> Tuple[int, int]:
    """The protobuf varint at b[i:] and the index after it."""
    v = shift = 0
    while True:
        c = b[i]
        v |= (c & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if c < 0x80:
            return v, i


_DYNAMO_PREFIXES = ("l__self___", "L__self___", "self_", "p_", "b_", "c_")


def _normalise(name: str, prefixed: bool = False) -> str:
    """A name reduced to a comparable form: dots (and any other separator) as
    underscores, lower case; with ``prefixed``, first without the one prefix
    torch.export or dynamo put in front of an initializer's name."""
    if prefixed:
        for p in _DYNAMO_PREFIXES:
            if name.startswith(p):
                name = name[len(p):]
                break
    return re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_").lower()


def _state_dict_of(obj: StateDictLike) -> Tuple[List[str], Optional[Mapping[str, Any]]]:
    if hasattr(obj, "state_dict") and callable(obj.state_dict):
        sd = obj.state_dict(keep_vars=False)
        return list(sd.keys()), sd
    if isinstance(obj, Mapping):
        return list(obj.keys()), obj
    if isinstance(obj, (str, bytes)):
        raise TypeError("map_state_dict: expected a torch.nn.Module, a state_dict or an iterable of keys, got a string")
    return [str(k) for k in obj], None


def _as_numpy(v: object) -> Optional[np.ndarray]:
    try:
        if hasattr(v, "detach"):
            v = v.detach().cpu().numpy()
        return np.asarray(v)
    except (TypeError, RuntimeError, ValueError):
        return None  # bfloat16 and other types numpy cannot hold: no value match


def map_state_dict(onnx_model_or_path: OnnxModel,
                   state_dict_keys_or_module: StateDictLike) -> Tuple[StateDictMapping, List[str]]:
    """Maps ONNX initializers to PyTorch state_dict keys (rules in the module doc).

    ``onnx_model_or_path``: an ``onnx.ModelProto`` or an ONNX file's path.
    ``state_dict_keys_or_module``: a ``torch.nn.Module``, a state_dict (a mapping
    key -> tensor or array) or an iterable of keys (then rule 4 cannot apply).

    Returns ``(mapping, unmapped)``: ``mapping`` a :class:`StateDictMapping`
    (``dict[onnx_name, state_dict_key]``), ``unmapped`` the keys left over.
    Each key and each ONNX name appears at most once in the mapping.
    """
    from onnx import numpy_helper

    model = _load_model(onnx_model_or_path)
    g = model.graph
    inits = [t.name for t in g.initializer]
    init_set = set(inits)
    keys, sd = _state_dict_of(state_dict_keys_or_module)
    mapping = StateDictMapping()
    used_onnx: set = set()
    left = list(keys)

    def take(onnx_name: str, key: str, rule: str, init: str) -> None:
        mapping._add(onnx_name, key, rule, init)
        used_onnx.add(onnx_name)

    # Initializers the dynamo exporter's optimizer rewrote: no rule maps them.
    used_onnx.update(_optimizer_rewritten(g, init_set))

    # 1. exact (or the copy --untie gave the key's own layer)
    readers: Dict[str, List[str]] = defaultdict(list)
    for n in g.node:
        for i in n.input:
            if i in init_set:
                readers[i].append(n.op_type)
    shapes = {t.name: tuple(t.dims) for t in g.initializer}
    rest = []
    for k in left:
        if k not in init_set or k in used_onnx:
            rest.append(k)
            continue
        if readers[k] and all(op == "Identity" for op in readers[k]):
            copies = [n for n in inits if n.startswith(k + ".") and shapes[n] == shapes[k]
                      and any(op != "Identity" for op in readers[n])]
            if len(copies) == 1:
                take(copies[0], k, "untied", copies[0])
                continue
        take(k, k, "exact", k)
    left = rest

    # 2. identity
    aliases = _identity_aliases(g, init_set)
    rest = []
    for k in left:
        if k in aliases:
            take(k, k, "identity", aliases[k])
        else:
            rest.append(k)
    left = rest

    # 3. dynamo's names, unique both ways
    by_norm_init: Dict[str, List[str]] = defaultdict(list)
    for n in inits:
        if n not in used_onnx:
            by_norm_init[_normalise(n, prefixed=True)].append(n)
    by_norm_key: Dict[str, List[str]] = defaultdict(list)
    for k in left:
        by_norm_key[_normalise(k)].append(k)
    rest = []
    for k in left:
        nk = _normalise(k)
        cands = by_norm_init.get(nk, [])
        if len(cands) == 1 and len(by_norm_key[nk]) == 1:
            take(cands[0], k, "dynamo", cands[0])
        else:
            rest.append(k)
    left = rest

    # 4. unique exact value
    if sd is not None and left:
        def fingerprint(a: np.ndarray) -> Tuple[str, Tuple[int, ...], bytes]:
            a = np.ascontiguousarray(a)
            return (a.dtype.str, a.shape, a.tobytes())

        init_by_fp: Dict[Tuple[str, Tuple[int, ...], bytes], List[str]] = defaultdict(list)
        for t in g.initializer:
            if t.name not in used_onnx:
                init_by_fp[fingerprint(numpy_helper.to_array(t))].append(t.name)
        key_fp = {}
        key_by_fp: Dict[Tuple[str, Tuple[int, ...], bytes], List[str]] = defaultdict(list)
        for k in left:
            a = _as_numpy(sd[k])
            if a is None:
                continue
            fp = fingerprint(a)
            key_fp[k] = fp
            key_by_fp[fp].append(k)
        rest = []
        for k in left:
            kfp = key_fp.get(k)
            if kfp is not None and len(init_by_fp.get(kfp, [])) == 1 and len(key_by_fp[kfp]) == 1:
                n = init_by_fp[kfp][0]
                take(n, k, "value", n)
            else:
                rest.append(k)
        left = rest

    # 5. a copy the dynamo exporter's optimizer folded from one key's tensor
    if sd is not None and left:
        folded = _folded_from(g, init_set, set(keys))
        linear = _linear_weights(g, set(folded))
        affine = _affine_reads(g, set(folded))
        rest = []
        for k in left:
            a = _as_numpy(sd[k])
            cands = [n for n, srcs in folded.items() if n not in used_onnx and srcs == [k]]
            rule = None
            if a is not None and len(cands) == 1:
                n = cands[0]
                b = numpy_helper.to_array(next(t for t in g.initializer if t.name == n))
                if a.ndim == 2 and b.shape == a.T.shape and (
                        np.array_equal(b, a.T) or _normalise(k) in linear.get(n, ()) or _VIEW_NAME["t"].match(n)):
                    rule = "transposed"
                elif b.shape != a.shape and b.size == a.size and (
                        np.array_equal(b.reshape(-1), a.reshape(-1))
                        or (_unit_dims_only(a.shape, b.shape)
                            and (_VIEW_NAME["view"].match(n) or _normalise(k) in affine.get(n, ())
                                 or "*" in affine.get(n, ())))):
                    rule = "reshaped"
            if rule:
                take(cands[0], k, rule, cands[0])
            else:
                rest.append(k)
        left = rest

    return mapping, left


# The names torch.export gives the FX nodes of a transpose and of a view;
# onnxscript's optimizer names what it folds from such a node after it.
_VIEW_NAME = {"t": re.compile(r"^(t|permute|transpose|numpy_t)(_\d+)?$"),
              "view": re.compile(r"^(view|reshape|_unsafe_view|unsqueeze|squeeze|flatten|unflatten)(_\d+)?$")}
_FX_LINEAR = re.compile(r"target=torch\.ops\.aten\.linear\.default\]\(args = \(%[^,]+, %([^,)]+)")
_FX_GROUP_NORM = re.compile(r"target=torch\.ops\.aten\.group_norm\.default\]\(args = \(%[^,]+, [^,]+, ([^)]*)\)")
_FX_ADDCMUL_ONE = re.compile(r"target=torch\.ops\.aten\.addcmul\.default\]\(args = \([^)]*\), kwargs = \{\}\)")


def _unit_dims_only(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether shapes a and b differ only by axes of size 1 (a view that
    keeps the order of the elements)."""
    return [d for d in a if d != 1] == [d for d in b if d != 1]


def _linear_weights(graph: "onnx.GraphProto", names: Collection[str]) -> Dict[str, Set[str]]:
    """Initializer (of ``names``) -> the normalised torch.export names it is
    the weight of in an ``aten.linear`` call, read from the reading nodes'
    ``pkg.torch.onnx.fx_node`` metadata: the dynamo exporter writes
    ``linear(x, W)`` as MatMul(x, Transpose(W)), and the optimizer folds the
    Transpose into a new initializer. This metadata stays in a tuned file,
    where the values no longer equal the module's."""
    out: Dict[str, Set[str]] = defaultdict(set)
    for n in graph.node:
        ins = [i for i in n.input if i in names]
        if not ins:
            continue
        m = _FX_LINEAR.search(_metadata(n, 9).get("pkg.torch.onnx.fx_node", ""))
        if m:
            for i in ins:
                out[i].add(_normalise(m.group(1), prefixed=True))
    return out


def _affine_reads(graph: "onnx.GraphProto", names: Collection[str]) -> Dict[str, Set[str]]:
    """Initializer (of ``names``) -> the parameters it may be a reshaped
    copy of, by what reads it: the normalised torch.export names of
    the weight and bias of the ``aten.group_norm`` call whose nodes read it
    (their ``pkg.torch.onnx.fx_node`` metadata): the dynamo exporter
    writes group_norm as InstanceNormalization over the groups, then a Mul
    by the weight and an Add of the bias, each reshaped to [C, 1, 1], and
    the optimizer folds each reshape into a new initializer (``val_N``).
    This metadata stays in a tuned file.

    Also, under the name ``*``: the initializers an ``aten.addcmul`` with
    its default value 1 reads (its fx_node has no keyword arguments), where
    they were folded from the value 1 (``value``, ``value_cast``), views
    and the exporter's constants (``val_N``) alone: the exporter writes
    addcmul(input, t1, t2) as input + (value·t1)·t2, and the optimizer folds
    value·t1 for a parameter t1 viewed to [1, C, 1, 1] into a new
    initializer (``tmp``; ConvNeXtV2's GlobalResponseNorm weight)."""
    out: Dict[str, set] = defaultdict(set)
    raw = _folded_from_raw(graph, names)
    for n in graph.node:
        ins = [i for i in n.input if i in names]
        if not ins:
            continue
        fx = _metadata(n, 9).get("pkg.torch.onnx.fx_node", "")
        m = _FX_GROUP_NORM.search(fx)
        if m:
            args = {_normalise(a, prefixed=True) for a in re.findall(r"%([^,\s)]+)", m.group(1))}
            for i in ins:
                out[i].update(args)
        elif _FX_ADDCMUL_ONE.search(fx):
            for i in ins:
                consts = [s for s in raw.get(i, []) if not ("." in s)]
                if consts and all(_UNIT_SOURCE.match(s) or _VIEW_NAME["view"].match(s) for s in consts):
                    out[i].add("*")
    return out


# What a folded initializer may come from besides its parameter and still
# hold the parameter's values: the exporter's constants (shapes) and
# addcmul's value 1 and its cast.
_UNIT_SOURCE = re.compile(r"^(val|value|value_cast)(_\d+)?$")


def _folded_from_raw(graph: "onnx.GraphProto", names: Collection[str]) -> Dict[str, List[str]]:
    """Initializer (of ``names``) -> every name its folded_from metadata lists."""
    import ast

    out = {}
    for v in list(graph.input) + list(graph.value_info):
        if v.name in names:
            src = _metadata(v).get(_FOLDED_FROM)
            if src:
                try:
                    out[v.name] = [s for s in ast.literal_eval(src) if isinstance(s, str)]
                except (ValueError, SyntaxError):
                    continue
    return out


def _folded_from(graph: "onnx.GraphProto", init_names: Collection[str],
                 keys: Collection[str] = ()) -> Dict[str, List[str]]:
    """Initializer -> the module tensors (dotted names, or any of ``keys``:
    a top-level parameter has no dot) onnxscript's optimizer folded it from,
    from its value_info's folded_from metadata."""
    import ast

    out = {}
    for v in list(graph.input) + list(graph.value_info):
        if v.name in init_names:
            src = _metadata(v).get(_FOLDED_FROM)
            if src:
                try:
                    names = ast.literal_eval(src)
                except (ValueError, SyntaxError):
                    continue
                out[v.name] = sorted(n for n in names if isinstance(n, str) and ("." in n or n in keys))
    return out


def to_key_layout(mapping: StateDictMapping, onnx_name: str, value: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The value of ONNX initializer ``onnx_name`` in the layout of the
    state_dict entry it maps to (of the given shape): transposed back for
    rule ``transposed``, reshaped for ``reshaped``, unchanged otherwise."""
    rule = mapping.rule.get(onnx_name)
    if rule == "transposed":
        return np.ascontiguousarray(np.asarray(value).T)
    if rule == "reshaped":
        return np.asarray(value).reshape(tuple(shape))
    return value
