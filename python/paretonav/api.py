"""tune, front, evaluate and inspect: the CLI's commands as Python functions."""

from __future__ import annotations

import difflib
import functools
import inspect as _inspect
import os
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from types import TracebackType
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Type,
                    TypeVar, Union)

import numpy as np

from . import data as _data
from ._run import ParetonavWarning, read_log, run_json
from ._types import JSON, Array, Data, Model, PathArg, Records, Strings, TaskSpecs
from .errors import MappingError
from .statedict import (_TORCH_KIND, StateDictMapping, _folded_from_raw, _identity_aliases, _metadata,
                        _optimizer_rewritten, map_state_dict, onnx_values, to_key_layout)
from .tasks import Task, as_tasks, check_criterion

if TYPE_CHECKING:
    import torch

__all__ = ["TuneResult", "FrontModel", "FrontResult", "EvalResult", "tune", "front", "evaluate", "inspect",
           "load_weights", "untrained"]

# The flags of each command the functions take as keyword parameters (dashes
# as underscores); the functions set the others (--data, --task, --json, ...)
# from their own arguments. tests/test_signatures.py checks them against the
# binary's --help.
_TUNE_FLAGS = ("map", "bn", "freeze", "untie", "max_memory", "method", "weights", "preference", "mgd_steps",
               "alpha", "gamma", "optimizer", "lr", "momentum", "lr_schedule", "steps", "epochs", "batch",
               "accumulate", "val_every", "seed", "force", "log", "csv", "plot", "checkpoint", "checkpoint_every",
               "keep_checkpoint", "verbose")
_FRONT_FLAGS = ("map", "bn", "freeze", "untie", "max_memory", "init", "spread", "method", "preference",
                "energy_scale", "energy_push", "alpha", "gamma", "optimizer", "lr", "momentum", "lr_schedule",
                "steps", "epochs", "batch", "workers", "seed", "ref", "reference", "force", "log", "csv",
                "checkpoint", "checkpoint_every", "keep_checkpoint", "verbose")
_EVAL_FLAGS = ("map", "bn", "freeze", "max_memory", "batch", "limit", "grad_out", "force", "verbose")

# Flags of the CLI a function has no keyword for, and why.
_NOT_KEYWORDS = {
    "task": "give the tasks as tasks=",
    "term": "give the terms as terms=",
    "json": "the function always reads the binary's JSON answer",
    "config": "give the settings as keywords",
    "resume": "continue an interrupted run with the CLI: paretonav COMMAND --resume CKPT",
    "problem": "the synthetic problems run with the CLI: paretonav front --problem NAME",
}

_F = TypeVar("_F", bound=Callable[..., Any])


def _keywords(fn: _F) -> _F:
    """Refuses, before anything runs, a keyword that is neither a parameter
    of ``fn`` nor one of its command's flags, with the nearest names."""
    sig = _inspect.signature(fn)
    known = [n for n, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD]
    command = {"tune": "tune", "front": "front", "evaluate": "eval"}[fn.__name__]

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        for k in kwargs:
            if k not in sig.parameters:
                why = _NOT_KEYWORDS.get(k)
                near = difflib.get_close_matches(k, known, n=3)
                raise TypeError("%s(): unknown keyword %r: %s" % (
                    fn.__name__, k, why.replace("COMMAND", command) if why else
                    "not a parameter of %s() nor a flag of `paretonav %s`%s (docs/python.md lists them)" % (
                        fn.__name__, command, "; did you mean %s?" % " or ".join(map(repr, near)) if near else "")))
        return fn(*args, **kwargs)

    return checked  # type: ignore[return-value]


#: A flag's value as a keyword gives it: None or False (left out), True (a
#: bare flag), a number, a string or path, or a list (the flag repeated).
FlagValue = Union[None, bool, int, float, PathArg, Sequence[str]]
Flags = Dict[str, FlagValue]


def _flags(given: Mapping[str, Any], names: Sequence[str]) -> Flags:
    """The flags among a function's arguments (``given``: its locals()), by name."""
    return {n: given[n] for n in names}


# ------------------------------------------------------------------ results


def _records(recs: Sequence[JSON]) -> Records:
    """Step records as a pandas DataFrame when pandas is installed, else the list."""
    try:
        import pandas as pd
    except ImportError:
        return list(recs)
    return pd.json_normalize(list(recs))


def stopped_text(status: str, steps: int) -> str:
    """Why a run stopped, in the words the CLI prints (status is the JSON's
    machine name: StepLimit, Interrupted, Failed, NotTerminated)."""
    words = {"StepLimit": "stopped after %d steps", "Interrupted": "interrupted after %d steps",
             "Failed": "failed after %d steps", "NotTerminated": "still running after %d steps"}
    return words.get(status, status + " after %d steps") % steps


@dataclass
class TuneResult:
    """What :func:`tune` did.

    ``losses_before`` / ``losses_after``: task -> loss on the data the tool
    measured on (``measured_on``: the validation data when ``val`` was given,
    else the training data); ``F_before`` / ``F_after`` the criterion,
    ``g_before`` / ``g_after`` g(θ) (``g`` is ``g_after``); ``metrics_before``
    / ``metrics`` task -> metric -> value; ``log`` the per-step records (a
    DataFrame when pandas is installed), ``config`` the run's configuration
    record; ``paths`` the files: ``model`` (the ONNX file tuned),
    ``out`` (the tuned ONNX), ``log``, ``workdir``; ``raw`` the binary's JSON;
    ``explanation`` what happened and what to try, as the CLI's summary says
    it (its ``lines`` and ``try``, ``short`` the run in one line, with the
    numbers behind them: ``band``, ``control``, ``bound``, ``F``,
    ``front_limit``), and ``summary`` those words as text.
    """

    status: str
    steps: int
    measured_on: str
    losses_before: Dict[str, Optional[float]]
    losses_after: Dict[str, Optional[float]]
    F_before: Optional[float]
    F_after: Optional[float]
    g_before: Optional[float]
    g_after: Optional[float]
    metrics_before: Dict[str, Dict[str, float]]
    metrics: Dict[str, Dict[str, float]]
    log: Records
    config: JSON
    paths: Dict[str, Optional[str]]
    raw: JSON
    loaded: List[str] = field(default_factory=list)
    unmapped: List[str] = field(default_factory=list)
    explanation: Dict[str, Any] = field(default_factory=dict)

    @property
    def g(self) -> Optional[float]:
        """g(θ) after tuning."""
        return self.g_after

    @property
    def summary(self) -> str:
        """What happened and what to try, in the words of the CLI's summary."""
        rows = list(self.explanation.get("lines") or [])
        tries = self.explanation.get("try") or []
        if tries:
            rows += ["to try:"] + ["  " + t for t in tries]
        return "\n".join(rows)

    def __repr__(self) -> str:
        rows = ["TuneResult(%s, on the %s data:" % (stopped_text(self.status, self.steps), self.measured_on)]
        for k in self.losses_after:
            a, b = self.losses_before.get(k), self.losses_after[k]
            rows.append("  %-10s %10.4g -> %.4g" % (k, float("nan") if a is None else a, float("nan") if b is None else b))
        for k, a, b in (("F", self.F_before, self.F_after), ("g", self.g_before, self.g_after)):
            if a is not None and b is not None:
                rows.append("  %-10s %10.4g -> %.4g" % (k, a, b))
        rows += ["  " + r for r in self.summary.splitlines()]
        rows[-1] += ")" if self.paths.get("out") is None else ""
        if self.paths.get("out") is not None:
            rows.append("  out=%s)" % self.paths["out"])
        return "\n".join(rows)


@dataclass
class FrontModel:
    """One model of a front: ``index``, ``path`` (its ONNX file), ``losses``,
    ``g``, ``metrics``, ``non_dominated`` (no other model of the front is at
    least as good in every task and better in one), ``explanation`` (what
    its run did, as the CLI's report says it: ``short``, its one line, and
    ``lines``, with the numbers behind them: ``band``, ``control``,
    ``bound``)."""

    index: int
    path: str
    losses: Dict[str, Optional[float]]
    g: Optional[float]
    metrics: Dict[str, Dict[str, float]]
    non_dominated: bool
    explanation: Dict[str, Any] = field(default_factory=dict)
    _module: Optional["torch.nn.Module"] = field(default=None, repr=False)

    def state_dict(self) -> Dict[str, Array]:
        """This model's weights under the module's state_dict keys (tensors;
        numpy arrays when front was given an ONNX file: keyed by initializer)."""
        if self._module is None:
            return onnx_values(self.path)
        import torch

        mapping, _ = map_state_dict(self.path, self._module)
        values = onnx_values(self.path)
        sd = {k: v.detach().clone() for k, v in self._module.state_dict().items()}
        for name, key in mapping.items():
            v = to_key_layout(mapping, name, values[name], sd[key].shape)
            sd[key] = torch.from_numpy(np.array(v)).to(dtype=sd[key].dtype, device=sd[key].device)
        return sd

    def load_into(self, module: "torch.nn.Module", strict: bool = True) -> List[str]:
        """Loads this model's weights into ``module`` in place (see :func:`load_weights`)."""
        return load_weights(module, self.path, strict=strict)


@dataclass
class FrontResult:
    """What :func:`front` did: ``models`` (a :class:`FrontModel` each),
    ``hv`` (hypervolume of the losses), ``log``, ``paths`` (``out_dir``,
    ``report``, ``log``, ``model``, ``workdir``), ``raw`` (report.json)."""

    status: str
    steps: int
    models: List[FrontModel]
    hv: Optional[float]
    log: Records
    paths: Dict[str, Optional[str]]
    raw: JSON

    @property
    def non_dominated(self) -> List[FrontModel]:
        """The models no other model dominates."""
        return [m for m in self.models if m.non_dominated]


@dataclass
class EvalResult:
    """What :func:`evaluate` measured: ``losses`` (task -> loss), ``g``,
    ``metrics``, ``examples``, ``raw`` (the binary's JSON)."""

    losses: Dict[str, Optional[float]]
    g: Optional[float]
    metrics: Dict[str, Dict[str, float]]
    examples: int
    raw: JSON


# ------------------------------------------------------------------ helpers


def _flag_args(flags: Flags) -> List[str]:
    """Keyword arguments as CLI flags: val_every=10 -> --val-every 10; True ->
    --flag; False/None -> left out; a list -> the flag repeated."""
    out: List[str] = []
    for k, v in flags.items():
        name = "--" + k.replace("_", "-")
        if v is None or v is False:
            continue
        if v is True:
            out.append(name)
        elif isinstance(v, (list, tuple)):
            for x in v:
                out += [name, str(x)]
        else:
            out += [name, os.fspath(v) if isinstance(v, os.PathLike) else str(v)]
    return out


def _is_module(model: object) -> bool:
    try:
        import torch
    except ImportError:
        return False
    return isinstance(model, torch.nn.Module)


def _onnx_io(path: str) -> Tuple[Dict[str, Optional[np.dtype]], Dict[str, Optional[np.dtype]]]:
    """The graph inputs (not initializers) and outputs with their numpy dtypes."""
    import onnx

    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}

    def np_type(vi):
        et = vi.type.tensor_type.elem_type
        if not et:
            return None
        try:
            return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(et))
        except AttributeError:
            return np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[et])

    ins = {vi.name: np_type(vi) for vi in m.graph.input if vi.name not in inits}
    outs = {vi.name: np_type(vi) for vi in m.graph.output}
    return ins, outs


def _dtypes(ins: Mapping[str, Optional[np.dtype]], outs: Mapping[str, Optional[np.dtype]], tasks: Sequence[Task],
            maps: Mapping[str, str]) -> Dict[str, Optional[np.dtype]]:
    """The arrays the binary will read, with the dtype each must have."""
    want: Dict[str, Optional[np.dtype]] = {}
    for name, dt in ins.items():
        want[maps.get(name, name)] = dt
    for t in tasks:
        if t.target:
            want[t.target] = np.dtype(np.int64) if t.integer_target else (outs.get(t.output) or np.dtype(np.float32))
    return want


def _maps(flags: Flags) -> Dict[str, str]:
    m = _strings(flags.get("map"))
    out = {}
    for s in m:
        a, _, b = str(s).partition("=")
        out[a.strip()] = b.strip()
    return out


def _workdir(workdir: Optional[PathArg]) -> Tuple[str, bool]:
    if workdir is None:
        return tempfile.mkdtemp(prefix="paretonav-"), True
    path = os.path.abspath(workdir)
    os.makedirs(path, exist_ok=True)
    return path, False


class _Temporary:
    """Removes a temporary work folder when the call ends: on success unless
    it holds the only result (``sole``), on any exception always. A Ctrl-C
    leaves a checkpoint naming the data in the folder: the checkpoint
    (``ckpt``, when it is new and outside the folder) goes with it, and the
    KeyboardInterrupt says so."""

    def __init__(self, path: str, remove: bool, sole: bool, ckpt: Optional[PathArg]) -> None:
        self.path, self.remove, self.sole = path, remove, sole
        self.ckpt = os.path.abspath(ckpt) if ckpt else os.path.join(path, "")
        self.ckpt_existed = bool(ckpt) and os.path.lexists(self.ckpt)
        self.result: Optional[Union[TuneResult, FrontResult]] = None

    def __enter__(self) -> "_Temporary":
        return self

    def __exit__(self, et: Optional[Type[BaseException]], e: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if not self.remove or (et is None and self.sole):
            return
        shutil.rmtree(self.path, ignore_errors=True)
        if et is None:
            paths = self.result.paths if self.result is not None else {}
            for k, p in list(paths.items()):
                if p and (p == self.path or p.startswith(self.path + os.sep)):
                    paths[k] = None
            return
        if issubclass(et, KeyboardInterrupt):
            gone = "the checkpoint and the data it names"
            if not self.ckpt.startswith(self.path + os.sep):
                if self.ckpt_existed:
                    gone = "the data the checkpoint %s names" % self.ckpt
                elif os.path.isfile(self.ckpt):
                    os.remove(self.ckpt)
            raise KeyboardInterrupt("%s; the temporary work folder %s was removed with %s (pass keep_workdir=True "
                                    "or workdir= to keep them for the CLI's --resume)"
                                    % (e, self.path, gone)) from None


def _data_args(flag: str, paths: Mapping[str, str]) -> List[str]:
    out = []
    for name, p in paths.items():
        if "," in p or "=" in name or "," in name:
            raise ValueError("%s: array %r at %s: names and paths given to the binary may not contain ',' "
                             "(nor a name '=')" % (flag, name, p))
        out += ["--" + flag, "%s=%s" % (name, p)]
    return out


def _prepare(model: Model, data: Data, inputs: Optional[Sequence[str]], outputs: Optional[Sequence[str]],
             workdir: str, opset: Optional[int], strict: bool, names: Optional[Sequence[str]] = None,
             training: bool = False, maps: Optional[Mapping[str, str]] = None) -> Tuple[str, Optional["torch.nn.Module"]]:
    """The ONNX file to run (exported from a module), and the module (or
    None). ``training``: warn about the parameters the file would not train.
    ``maps``: input -> array (``map=``), for a data source given as a string."""
    if isinstance(model, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(model))
        if not os.path.isfile(path):
            raise FileNotFoundError("model %s: no such file" % path)
        return path, None
    if not _is_module(model):
        raise TypeError("model: expected a torch.nn.Module or the path of an ONNX file, got %s" % type(model).__name__)
    from ._export import export

    if not outputs:
        raise ValueError("outputs: name the tensors forward() returns, in order (e.g. outputs=['seg_logp', 'depth'])")
    if not inputs:
        params = list(_inspect.signature(model.forward).parameters.values())
        inputs = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    import torch

    ex = _data.first_examples(data, inputs, data_names=names, maps=maps)
    try:
        dev = next(model.parameters()).device
    except StopIteration:
        dev = torch.device("cpu")
    args = []
    for n in inputs:
        t = torch.from_numpy(np.ascontiguousarray(ex[n]))
        if t.is_floating_point():
            t = t.to(torch.float32)
        args.append(t.to(dev))
    try:
        path = export(model, args, os.path.join(workdir, "model.onnx"), inputs, outputs, opset=opset)
    except RuntimeError as e:
        m = re.search(r"number of output names provided \((\d+)\) exceeded number of outputs \((\d+)\)", str(e))
        if not m:
            raise
        raise ValueError(_outputs_message(int(m.group(2)), outputs)) from None
    returned = len(_onnx_io(path)[1])
    if returned != len(outputs):
        raise ValueError(_outputs_message(returned, outputs))
    if training:
        _warn_untrained(model, path)
    _check_accounted(model, path, strict, before=True)
    return path, model


def _outputs_message(returned: int, outputs: Sequence[str]) -> str:
    return ("outputs: forward() returns %d tensor%s (nested tuples counted tensor by tensor), but %d name%s given "
            "(%s): give one name per tensor, in order" % (
                returned, "" if returned == 1 else "s", len(outputs), " was" if len(outputs) == 1 else "s were",
                ", ".join(map(repr, outputs))))


def _aliases(module: "torch.nn.Module") -> Dict[str, str]:
    """state_dict key -> an earlier key holding the very same tensor (shared parameters)."""
    seen: Dict[Tuple[int, Tuple[int, ...], Tuple[int, ...]], str] = {}
    out = {}
    for k, v in module.state_dict(keep_vars=True).items():
        if not hasattr(v, "data_ptr"):
            continue
        ident = (v.data_ptr(), tuple(v.shape), tuple(v.stride()))
        if v.numel() and ident in seen:
            out[k] = seen[ident]
        else:
            seen[ident] = k
    return out


def _overlaps(t: "torch.Tensor") -> bool:
    """Whether two elements of tensor t share one memory location (an
    expand()ed or as_strided view): copying into it would fail."""
    import torch

    f = getattr(torch, "_debug_has_internal_overlap", None)
    if f is not None:
        r = f(t)
        if r in (0, 1):  # 2: too hard to tell; the stride test decides
            return r == 1
    span = 0  # the last element reached by the dimensions taken so far, in elements
    for stride, size in sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz > 1):
        if stride <= span:
            return True
        span += stride * (size - 1)
    return False


def _unwritable(t: "torch.Tensor") -> Optional[str]:
    """Why a tuned value cannot be copied into tensor t in place, or None."""
    if not hasattr(t, "data_ptr"):
        return None
    if t.numel() > 1 and _overlaps(t):
        return ("is a view whose elements share memory (expand(), a stride of 0); "
                "make it a tensor of its own in the module, e.g. nn.Parameter(p.detach().clone())")
    if getattr(t, "is_inference", lambda: False)():
        return "is an inference tensor (made under torch.inference_mode()), which cannot be changed in place"
    if getattr(t, "is_meta", False):
        return "is on the meta device and holds no data"
    return None


def _tied_split(module: "torch.nn.Module", path: str, mapping: StateDictMapping, untie: bool) -> Optional[MappingError]:
    """Why the module's shared tensors cannot take what ``path`` holds (a
    MappingError naming their keys), or None. A tensor the module shares under several names (``b.weight =
    a.weight``) is one initializer; ``--untie`` would tune each node
    reading it apart (``untie``: path is the model about to be tuned so),
    and a tuned file holding such copies (``NAME.NODE``) has more values
    than the module has tensors for. Either way one tuned copy would be
    dropped silently."""
    groups: Dict[str, List[str]] = {}
    for k, first in _aliases(module).items():
        groups.setdefault(first, [first]).append(k)
    key_init = {key: mapping.initializer[name] for name, key in mapping.items()}
    shared = {key_init[first]: keys for first, keys in groups.items() if first in key_init}
    if not shared:
        return None
    import onnx

    g = onnx.load(path, load_external_data=False).graph
    inits = {t.name: tuple(t.dims) for t in g.initializer}
    alias_of = _identity_aliases(g, set(inits))
    readers: Dict[str, int] = {}
    for n in g.node:
        if n.op_type != "Identity":
            for i in set(n.input):
                src = alias_of.get(i, i)
                readers[src] = readers.get(src, 0) + 1
    name = type(module).__name__
    for init, keys in shared.items():
        last = keys[-1]
        fix = ("give each name its own Parameter first (module.%s = nn.Parameter(module.%s.detach().clone()))"
               % (last, last))
        if untie and readers.get(init, 0) > 1:
            return MappingError(
                "untie=True would tune the %d nodes reading initializer %s apart, but in %s %s are one tensor, "
                "which can hold only one tuned copy (nothing was tuned). Tune them as one (leave untie off), or %s."
                % (readers[init], init, name, ", ".join(keys), fix), keys)
        copies = sorted(n for n in inits if n.startswith(init + ".") and inits[n] == inits[init] and readers.get(n))
        if not untie and copies:
            return MappingError(
                "%s holds copies of %s tuned apart (%s), but in %s %s are one tensor, which can hold only one "
                "of them (nothing was loaded). Tune with untie off, or %s and tune again."
                % (path, init, ", ".join(copies), name, ", ".join(keys), fix), keys)
    return None


def _check_rewritten(module: "torch.nn.Module", path: str) -> None:
    """Refuses a file whose initializers torch.onnx.export's optimizer
    rewrote (BatchNorm fused into Conv): loading it can only be wrong."""
    import onnx

    g = onnx.load(path, load_external_data=False).graph
    rw = sorted(_optimizer_rewritten(g, {t.name for t in g.initializer}))
    if rw:
        raise MappingError(
            "%s: torch.onnx.export's optimizer (dynamo=True with its default optimize=True) rewrote %d initializer%s "
            "(%s%s: BatchNorm fused into the Conv before it, or tensors folded together), which hold%s no parameter "
            "or buffer of %s: its tuned values cannot be loaded into the module (nothing was loaded). Export the "
            "module again with torch.onnx.export(..., dynamo=False, training=torch.onnx.TrainingMode.PRESERVE, "
            "do_constant_folding=False), or dynamo=True, optimize=False, or paretonav.export, and tune that file" % (
                path, len(rw), "" if len(rw) == 1 else "s", ", ".join(rw[:8]), ", ..." if len(rw) > 8 else "",
                "s" if len(rw) == 1 else "", type(module).__name__), rw)


def _check_accounted(module: "torch.nn.Module", path: str, strict: bool, before: bool,
                     source: Optional[str] = None) -> Tuple[StateDictMapping, List[str]]:
    _check_rewritten(module, path)
    mapping, unmapped = map_state_dict(source or path, module)
    if source:  # the names found on the source hold the values in path
        have = set(onnx_values(path))
        gone = [k for n, k in mapping.items() if n not in have]
        if gone:
            raise MappingError("%s: no value named like the initializers of %s that hold %s"
                               % (path, source, ", ".join(gone)), gone)
    if not before:
        err = _tied_split(module, path, mapping, untie=False)
        if err:
            raise err
    aliases = _aliases(module)
    mapped = set(mapping.values())
    sd = module.state_dict(keep_vars=True)
    # Accounted for without an initializer: BatchNorm's step counter (no
    # exported graph reads it), a second name of a mapped tensor, and
    # entries that are no tensors (a module's _extra_state).
    left = [k for k in unmapped
            if not k.endswith("num_batches_tracked") and not (k in aliases and aliases[k] in mapped)
            and hasattr(sd[k], "data_ptr")]
    # torch.onnx.export's optimizer drops a parameter whose value it folds
    # away, such as a zero bias: the file computes with zeros, which is what
    # the module holds, so the module stays exact with it left as it is
    # (tune and load_weights name it, untrained).
    folded = [k for k in left if _all_zero(sd[k])] if left and _optimized_file(source or path, mapping) else []
    bad = [(k, why) for k, why in ((k, _unwritable(sd[k])) for k in dict.fromkeys(mapping.values())) if why]
    if bad:
        raise MappingError(
            "%s: cannot load into %s%s: %s" % (
                type(module).__name__, "this parameter or buffer" if len(bad) == 1 else "these parameters or buffers",
                " (nothing was tuned)" if before else " (nothing was loaded)",
                "; ".join("%s %s" % kw for kw in bad)),
            [k for k, _ in bad])
    refused = [k for k in left if k not in folded]
    if refused and strict:
        left = refused
        raise MappingError(
            "%s: no initializer of %s holds %s %s: forward() does not read %s, or the export renamed or merged "
            "%s%s. Pass strict=False to leave %s as %s." % (
                type(module).__name__, path, "this parameter or buffer" if len(left) == 1 else "these parameters or buffers",
                ", ".join(left), "it" if len(left) == 1 else "them", "it" if len(left) == 1 else "them",
                " (nothing was tuned)" if before else " (nothing was loaded)",
                "it" if len(left) == 1 else "them", "it is" if len(left) == 1 else "they are"),
            left)
    return mapping, left


def _optimized_file(onnx_path: PathArg, mapping: Any, graph: Any = None) -> bool:
    """Whether torch.onnx.export's optimizer wrote ``onnx_path``: it rewrote
    initializers, or the mapping found folded (transposed or reshaped) copies."""
    if any(mapping.rule.get(n) in ("transposed", "reshaped") for n in mapping):
        return True
    if graph is None:
        import onnx

        graph = onnx.load(os.fspath(onnx_path), load_external_data=False).graph
    return bool(_optimizer_rewritten(graph, {t.name for t in graph.initializer})) or any(
        k.startswith("pkg.onnxscript.") for n in graph.node for k in _metadata(n, 9))


def _all_zero(t: Any) -> bool:
    """Whether tensor ``t`` holds only zeros (a bias the optimizer folded away)."""
    import torch

    with torch.no_grad():
        return bool(t.numel() > 0 and not torch.any(t.detach() != 0))


def untrained(module: "torch.nn.Module", onnx_path: PathArg) -> Dict[str, str]:
    """The module's parameters (``requires_grad=True``) that tuning
    ``onnx_path`` would not train, each with why: key -> reason, in
    ``named_parameters`` order; empty when every one is trained.

    A parameter is not trained when no initializer of the file holds it
    (forward() does not read it; the export stored a copy of it, or of a
    tensor computed from it, as a constant, as torch.export does with a
    tensor cached in eval mode such as timm's ``attention_bias_cache``;
    ``torch.onnx.export``'s optimizer folded it away, as it does with a
    zero bias) or when the initializer that holds it is marked a buffer or a
    constant by the dynamo exporter's metadata (the binary trains neither)."""
    import onnx

    mapping, _ = map_state_dict(onnx_path, module)
    g = onnx.load(os.fspath(onnx_path), load_external_data=False).graph
    inits = {t.name for t in g.initializer}
    kind = {}
    for v in list(g.input) + list(g.value_info):
        if v.name in inits:
            k = _metadata(v).get(_TORCH_KIND)
            if k:
                kind[v.name] = k
    optimized = _optimized_file(onnx_path, mapping, g)
    held = {key: mapping.initializer[n] for n, key in mapping.items()}
    folded = _folded_from_raw(g, inits) if kind else {}
    aliases = _aliases(module)
    out: Dict[str, str] = {}
    for key, p in module.named_parameters():
        if not p.requires_grad:
            continue
        init = held.get(key) or held.get(aliases.get(key, ""))
        if init is None:
            out[key] = ("no initializer of the file holds it: forward() does not read it, %s" % (
                "or torch.onnx.export's optimizer (dynamo=True, optimize=True) folded it away (it drops a "
                "parameter whose value it can fold, such as a zero bias, and fuses BatchNorm into Conv)"
                if optimized else "or the export stored a copy of it (or of a tensor computed from it) as a "
                "constant, as torch.export does with a tensor the module caches in eval mode (timm's "
                "attention_bias_cache)"))
        elif kind.get(init, "PARAMETER") != "PARAMETER":
            out[key] = "the file marks its initializer %s a %s (InputSpec.kind), which is not trained" % (
                init, kind[init].lower().replace("_", " "))
        elif init in folded and not any("." in src or kind.get(src) == "PARAMETER" for src in folded[init]):
            # The binary's rule (importer.Model.NotParameters): a folded
            # tensor is a parameter's copy when one of its sources is a
            # PARAMETER initializer or a dotted state_dict key; a top-level
            # parameter has no dot and reads as an exporter constant.
            out[key] = ("torch.onnx.export's optimizer folded it into %s (from %s), which the binary takes for a "
                        "constant and does not train: a parameter of the top-level module has no dot in its name, "
                        "as the exporter's own constants do not; move it into a submodule or export with "
                        "optimize=False" % (init, ", ".join(folded[init])))
    return out


def _warn_untrained(module: Optional["torch.nn.Module"], path: str) -> None:
    """A ParetonavWarning naming every parameter of ``module`` that tuning
    ``path`` would leave as it is (see :func:`untrained`), before anything runs."""
    if module is None:
        return
    left = untrained(module, path)
    if left:
        warnings.warn("%s: %d parameter%s of %s will not be trained:\n%s" % (
            path, len(left), "" if len(left) == 1 else "s", type(module).__name__,
            "\n".join("  %s: %s" % kv for kv in left.items())), ParetonavWarning, stacklevel=4)


def load_weights(module: "torch.nn.Module", onnx_path: PathArg, strict: bool = True,
                 source: Optional[PathArg] = None) -> List[str]:
    """Copies the initializers of ``onnx_path`` into ``module``'s parameters
    and buffers in place, matched by :func:`paretonav.map_state_dict`.

    Every state_dict entry must be accounted for: mapped, a second name of a
    mapped tensor (shared parameters), a BatchNorm ``num_batches_tracked``
    counter (no exported graph reads it; it is left as it is), or, in a file
    of ``torch.onnx.export``'s optimizer, a parameter of zeros that it folded
    away (the file computes with those zeros; it is left as it is, with a
    warning). Anything else
    raises :class:`MappingError` naming it before anything is copied, unless
    ``strict=False`` (then it is left as it is). ``source``: the ONNX file
    ``onnx_path`` was tuned from, exported from ``module`` as it still is;
    the mapping is then found on it (where the values still equal the
    module's, so renamed initializers match by value) and applied by name to
    ``onnx_path``, whose initializers keep their names. Returns the keys loaded."""
    src = None if source is None else os.fspath(source)
    return _load_weights(module, os.fspath(onnx_path), strict, src, warn=True)


def _load_weights(module: "torch.nn.Module", onnx_path: str, strict: bool, source: Optional[str],
                  warn: bool) -> List[str]:
    """load_weights; ``warn``: a ParetonavWarning naming the parameters left
    as they are (strict=False), which tune has named before it ran."""
    import torch

    mapping, left = _check_accounted(module, onnx_path, strict, before=False, source=source)
    params = dict(module.named_parameters())
    kept = [k for k in left if k in params]
    if warn and kept:
        why = untrained(module, source or onnx_path)
        warnings.warn("%s: %d parameter%s of %s %s not in the file and %s left as %s:\n%s" % (
            onnx_path, len(kept), "" if len(kept) == 1 else "s", type(module).__name__,
            "is" if len(kept) == 1 else "are", "is" if len(kept) == 1 else "are", "it is" if len(kept) == 1 else "they are",
            "\n".join("  %s: %s" % (k, why.get(k, "no initializer of the file holds it")) for k in kept)),
            ParetonavWarning, stacklevel=3)
    values = onnx_values(onnx_path)
    sd = module.state_dict(keep_vars=True)
    values = {name: to_key_layout(mapping, name, values[name], sd[key].shape) if values[name].size == sd[key].numel()
              else values[name] for name, key in mapping.items()}
    for name, key in mapping.items():
        if tuple(values[name].shape) != tuple(sd[key].shape):
            raise MappingError("%s: initializer %r has shape %s, the module's %r %s"
                               % (onnx_path, name, values[name].shape, key, tuple(sd[key].shape)), [key])
    with torch.no_grad():
        new = {name: torch.from_numpy(np.array(values[name])).to(dtype=sd[key].dtype, device=sd[key].device)
               for name, key in mapping.items()}
        # All or nothing: the values copied over so far are put back when
        # a copy fails.
        saved = []
        try:
            for name, key in mapping.items():
                t = sd[key]
                saved.append((t, t.detach().clone()))
                t.copy_(new[name])
        except BaseException:
            for t, old in reversed(saved):
                t.copy_(old)
            raise
    return list(mapping.values())


def _finite(x: Optional[float]) -> Optional[float]:
    return None if x is None else float(x)


def _strings(v: FlagValue) -> List[str]:
    """A flag given once or several times (a string or a list of them) as a
    list; None: an empty one."""
    if v is None:
        return []
    if isinstance(v, (str, os.PathLike)):
        return [os.fspath(v)]
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v]
    return [str(v)]


def _frozen(module: Optional["torch.nn.Module"], model_path: str, flags: Flags) -> None:
    """Adds a --freeze pattern, by initializer name, for each parameter with
    requires_grad=False (PyTorch's way of saying "do not train this") and
    for each floating-point buffer other than BatchNorm's statistics (which
    the binary never trains): a file without the dynamo exporter's metadata
    (the TorchScript exporter's) does not say which initializers are
    buffers, and the binary trains every float initializer a node reads as
    data, such as torchvision Swin v2's relative_coords_table. An
    initializer that also holds a parameter (PyTorch merges equal ones) is
    left to train."""
    if module is None:
        return
    import torch

    mapping, _ = map_state_dict(model_path, module)
    by_key = {k: n for n, k in mapping.items() if mapping.initializer[n] == n}
    params = dict(module.named_parameters())
    names = [by_key[k] for k, p in params.items() if not p.requires_grad and k in by_key]
    holds_param = {mapping.initializer[n] for n, k in mapping.items() if k in params and params[k].requires_grad}
    stats = {"%s.%s" % (m, b) if m else b for m, mod in module.named_modules()
             if isinstance(mod, torch.nn.modules.batchnorm._NormBase) for b in ("running_mean", "running_var")}
    inits = set()
    if any(k not in by_key for k, _ in module.named_buffers()):
        import onnx

        inits = {t.name for t in onnx.load(os.fspath(model_path), load_external_data=False).graph.initializer}
    for k, b in module.named_buffers():
        if not b.is_floating_point() or k in stats:
            continue
        n = by_key.get(k) or (k if k in inits else None)  # a non-persistent buffer is in no state_dict
        if n is not None and n not in holds_param and n not in names:
            names.append(n)
    if names:
        flags["freeze"] = _strings(flags.get("freeze")) + [re.sub(r"([*?\\\[])", r"\\\1", n) for n in names]


def _check_untie(module: Optional["torch.nn.Module"], model_path: str, flags: Flags) -> None:
    """With untie=True, refuses a module whose shared tensors it would split."""
    if module is None or not flags.get("untie"):
        return
    err = _tied_split(module, model_path, map_state_dict(model_path, module)[0], untie=True)
    if err:
        raise err


def _task_args(tasks: Sequence[Task], terms: Sequence[Task]) -> List[str]:
    out = []
    for t in tasks:
        out += ["--task", str(t)]
    for t in terms:
        out += ["--term", str(t)]
    return out


def _write(workdir: str, sub: str, data: Data, model_path: str, tasks: Sequence[Task], flags: Flags,
           what: str, names: Optional[Sequence[str]] = None) -> Dict[str, str]:
    ins, outs = _onnx_io(model_path)
    return _data.write_data(os.path.join(workdir, sub), data, _dtypes(ins, outs, tasks, _maps(flags)), what, names)


def _source_args(flag: str, workdir: str, data: Data, model_path: str, tasks: Sequence[Task], flags: Flags,
                 names: Optional[Sequence[str]] = None) -> List[str]:
    """``--flag`` arguments for ``data``: a string is a data source spec the
    binary reads itself (``"nyuv2:DIR"``, ``"folder:DIR"``, ``"d.npz"``...),
    passed through; anything else is written under ``workdir/flag``."""
    if isinstance(data, str):
        if not data.strip():
            raise ValueError("%s: an empty data source; give e.g. 'nyuv2:DIR' or 'd.npz'" % flag)
        return ["--" + flag, data]
    return _data_args(flag, _write(workdir, flag, data, model_path, tasks, flags, flag, names))


# ------------------------------------------------------------------ commands


def _run_training(command: str, model_path: str, workdir: str, data: Data, val: Optional[Data], tasks: List[Task],
                  terms: List[Task], criterion: Optional[str], flags: Flags, out_args: List[str],
                  progress: bool, keep_data: bool, names: Optional[Sequence[str]] = None) -> Tuple[JSON, str]:
    """Writes ``data`` (and ``val``) under ``workdir``, runs ``paretonav COMMAND`` on
    them with the tasks, criterion, ``out_args`` and the other flags, and returns
    its JSON result and the log's path. The data files are removed afterwards
    unless ``keep_data``, and kept on Ctrl-C: the checkpoint names them, and
    ``paretonav COMMAND --resume`` needs them."""
    written = [os.path.join(workdir, "data")]
    try:
        args = [command, model_path] + _source_args("data", workdir, data, model_path, tasks + terms, flags, names)
        if val is not None:
            written.append(os.path.join(workdir, "val"))
            args += _source_args("val", workdir, val, model_path, tasks + terms, flags, names)
        given_log = flags.pop("log", None)
        log = os.path.abspath(given_log) if isinstance(given_log, (str, os.PathLike)) and given_log else \
            os.path.join(workdir, command + ".jsonl")
        args += _task_args(tasks, terms)
        if criterion is not None:
            args += ["--criterion", str(criterion)]
        args += out_args + ["--log", log, "--json"] + _flag_args(flags)
        res, _ = run_json(args, log=log, progress=progress, label=command)
    except KeyboardInterrupt:
        keep_data = True
        raise
    finally:
        if not keep_data:
            for d in written:
                shutil.rmtree(d, ignore_errors=True)
    return res, log


@_keywords
def tune(model: Model, data: Data, *, tasks: TaskSpecs, criterion: Optional[str] = None,
         inputs: Optional[Sequence[str]] = None, outputs: Optional[Sequence[str]] = None, val: Optional[Data] = None,
         terms: TaskSpecs = (), out: Optional[PathArg] = None, workdir: Optional[PathArg] = None,
         progress: bool = True, load_back: bool = True, strict: bool = True, opset: Optional[int] = None,
         keep_data: bool = False, keep_workdir: bool = False, names: Optional[Sequence[str]] = None,
         # `paretonav tune`'s flags (_TUNE_FLAGS); None and False leave a flag out: the binary's default.
         map: Optional[Strings] = None, bn: Optional[Literal["frozen", "train"]] = None,
         freeze: Optional[Strings] = None, untie: bool = False, max_memory: Optional[str] = None,
         method: Optional[Literal["png", "mgd", "linear", "epo"]] = None, weights: Optional[str] = None,
         preference: Optional[str] = None, mgd_steps: Optional[int] = None, alpha: Optional[float] = None,
         gamma: Optional[float] = None, optimizer: Optional[Literal["sgd", "adam"]] = None,
         lr: Optional[float] = None, momentum: Optional[float] = None,
         lr_schedule: Optional[Literal["constant", "cosine", "step"]] = None, steps: Optional[int] = None,
         epochs: Optional[int] = None, batch: Optional[int] = None, accumulate: Optional[int] = None,
         val_every: Optional[int] = None, seed: Optional[int] = None, force: bool = False,
         log: Optional[PathArg] = None, csv: Optional[PathArg] = None, plot: Optional[PathArg] = None,
         checkpoint: Optional[PathArg] = None, checkpoint_every: Optional[int] = None,
         keep_checkpoint: bool = False, verbose: bool = False) -> TuneResult:
    """Tunes ``model`` toward ``criterion`` inside the Pareto set of ``tasks`` (``paretonav tune``).

    ``model``: a torch.nn.Module (exported, tuned, and its tuned weights
    loaded back into it in place) or an ONNX file's path (tuned into
    ``out``). ``data`` / ``val``: dict name -> numpy array or tensor (first
    axis = examples), a torch Dataset yielding such dicts per example, or
    tuples named by ``names`` in order, or a DataLoader yielding batches of
    either (streamed to disk batch by batch).
    ``tasks`` / ``terms``: CLI strings or :class:`Task` objects. ``inputs``:
    forward()'s argument names, in order (default: its signature);
    ``outputs``: names for what forward() returns, in order. The keywords
    from ``map`` on are ``paretonav tune``'s flags, dashes as underscores
    (``steps=300, batch=8, lr=1e-4, val_every=50, freeze=["enc.*"],
    untie=True``): None or False leaves a flag to the binary's default, a
    list repeats it. Files go to ``workdir`` (kept; the data
    files written there are removed after the run unless ``keep_data``);
    by default a new temporary folder, removed when the call returns or
    raises (Ctrl-C included) unless ``keep_workdir``, or unless it holds
    the only result (an ONNX path, or ``load_back=False``, without ``out``).
    A keyword that is neither raises TypeError, before anything runs."""
    flags = _flags(locals(), _TUNE_FLAGS)
    task_list, term_list = as_tasks(tasks), as_tasks(terms, "terms")
    if criterion is not None:
        check_criterion(criterion, task_list, term_list)
    work, own = _workdir(workdir)
    sole = out is None and (not _is_module(model) or not load_back)
    ckpt = checkpoint or (os.fspath(out) + ".ckpt" if out else None)  # None: in the work folder
    with _Temporary(work, own and not keep_workdir, sole, ckpt) as tmp:
        result = tmp.result = _tune(model, data, task_list, term_list, criterion, inputs, outputs, val, out, work,
                                    progress, load_back, strict, opset, keep_data, names, flags)
    return result


def _tune(model: Model, data: Data, tasks: List[Task], terms: List[Task], criterion: Optional[str],
          inputs: Optional[Sequence[str]], outputs: Optional[Sequence[str]], val: Optional[Data],
          out: Optional[PathArg], workdir: str, progress: bool, load_back: bool, strict: bool, opset: Optional[int],
          keep_data: bool, names: Optional[Sequence[str]], flags: Flags) -> TuneResult:
    model_path, module = _prepare(model, data, inputs, outputs, workdir, opset, strict, names, training=True,
                                  maps=_maps(flags))
    _frozen(module, model_path, flags)
    _check_untie(module, model_path, flags)
    out_path = os.path.abspath(out) if out else os.path.join(
        workdir, os.path.splitext(os.path.basename(model_path))[0] + "_tuned.onnx")
    res, log = _run_training("tune", model_path, workdir, data, val, tasks, terms, criterion, flags,
                             ["--out", out_path], progress, keep_data, names)
    out_file = os.path.abspath(res.get("output") or out_path)
    recs = read_log(log)
    config: JSON = next((r for r in recs if r.get("kind") == "config"), {})
    steps = [r for r in recs if "step" in r and r.get("kind") is None]
    before, after = res.get("before") or {}, res.get("after") or {}
    result = TuneResult(
        status=res.get("status", ""), steps=int(res.get("steps") or 0), measured_on=res.get("measured_on", ""),
        losses_before={k: _finite(v) for k, v in (before.get("losses") or {}).items()},
        losses_after={k: _finite(v) for k, v in (after.get("losses") or {}).items()},
        F_before=_finite(before.get("F")), F_after=_finite(after.get("F")),
        g_before=_finite(before.get("g")), g_after=_finite(after.get("g")),
        metrics_before=before.get("metrics") or {}, metrics=after.get("metrics") or {},
        log=_records(steps), config=config,
        paths={"model": model_path, "out": out_file, "log": log, "workdir": workdir},
        raw=res, explanation=res.get("explanation") or {})
    if res.get("checkpoint"):
        result.paths["checkpoint"] = res["checkpoint"]
    if module is not None and load_back:
        _, result.unmapped = _check_accounted(module, out_file, strict, before=False)
        result.loaded = _load_weights(module, out_file, strict, None, warn=False)
    return result


def _non_dominated(losses: List[Dict[str, Optional[float]]]) -> List[bool]:
    """Per model, whether no other model is at least as good in every task and better in one; a model
    with a missing loss is neither dominated nor dominating."""
    def dominates(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
        return all(a[k] <= b[k] for k in a) and any(a[k] < b[k] for k in a)

    full: List[Optional[Dict[str, float]]] = [
        {k: v for k, v in l.items() if v is not None} if all(v is not None for v in l.values()) else None
        for l in losses]
    return [a is not None and not any(b is not None and j != i and dominates(b, a) for j, b in enumerate(full))
            for i, a in enumerate(full)]


@_keywords
def front(model: Model, data: Data, *, tasks: TaskSpecs, models: Optional[int] = None,
          criterion: Optional[str] = None, inputs: Optional[Sequence[str]] = None,
          outputs: Optional[Sequence[str]] = None, val: Optional[Data] = None, terms: TaskSpecs = (),
          out_dir: Optional[PathArg] = None, workdir: Optional[PathArg] = None, progress: bool = True,
          strict: bool = True, opset: Optional[int] = None, keep_data: bool = False, keep_workdir: bool = False,
          names: Optional[Sequence[str]] = None,
          # `paretonav front`'s flags (_FRONT_FLAGS); None and False leave a flag out: the binary's default.
          map: Optional[Strings] = None, bn: Optional[Literal["frozen", "train"]] = None,
          freeze: Optional[Strings] = None, untie: bool = False, max_memory: Optional[str] = None,
          init: Optional[str] = None, spread: Optional[float] = None, method: Optional[Literal["png", "epo"]] = None,
          preference: Optional[str] = None, energy_scale: Optional[Literal["model", "shared", "raw"]] = None,
          energy_push: Optional[Literal["trade", "full"]] = None, alpha: Optional[float] = None,
          gamma: Optional[float] = None, optimizer: Optional[Literal["sgd", "adam"]] = None,
          lr: Optional[float] = None, momentum: Optional[float] = None,
          lr_schedule: Optional[Literal["constant", "cosine", "step"]] = None, steps: Optional[int] = None,
          epochs: Optional[int] = None, batch: Optional[int] = None, workers: Optional[int] = None,
          seed: Optional[int] = None, ref: Optional[str] = None, reference: Optional[PathArg] = None,
          force: bool = False, log: Optional[PathArg] = None, csv: Optional[PathArg] = None,
          checkpoint: Optional[PathArg] = None, checkpoint_every: Optional[int] = None,
          keep_checkpoint: bool = False, verbose: bool = False) -> FrontResult:
    """Trains ``models`` diverse Pareto models from ``model`` (``paretonav front``).

    Arguments as for :func:`tune`; ``models`` and ``criterion`` are the
    binary's ``--models`` and ``--criterion`` (None: its defaults, 5 models
    and ``energy``); ``out_dir`` receives the models and the
    report (default: WORKDIR/front). The module itself is left unchanged:
    each :class:`FrontModel` gives its ``state_dict()`` or ``load_into(module)``.
    The keywords from ``map`` on are ``paretonav front``'s flags
    (``steps``, ``batch``, ``lr``, ``spread``...).
    A temporary ``workdir`` is removed at the end unless ``keep_workdir``,
    or unless it holds the models (no ``out_dir``)."""
    flags = _flags(locals(), _FRONT_FLAGS)
    task_list, term_list = as_tasks(tasks), as_tasks(terms, "terms")
    work, own = _workdir(workdir)
    ckpt = checkpoint or (os.path.join(out_dir, "front.ckpt") if out_dir else None)
    with _Temporary(work, own and not keep_workdir, out_dir is None, ckpt) as tmp:
        result = tmp.result = _front(model, data, task_list, term_list, models, criterion, inputs, outputs, val,
                                     out_dir, work, progress, strict, opset, keep_data, names, flags)
    return result


def _front(model: Model, data: Data, tasks: List[Task], terms: List[Task], models: Optional[int],
           criterion: Optional[str], inputs: Optional[Sequence[str]], outputs: Optional[Sequence[str]],
           val: Optional[Data], out_dir: Optional[PathArg], workdir: str, progress: bool, strict: bool,
           opset: Optional[int], keep_data: bool, names: Optional[Sequence[str]], flags: Flags) -> FrontResult:
    model_path, module = _prepare(model, data, inputs, outputs, workdir, opset, strict, names, training=True,
                                  maps=_maps(flags))
    _frozen(module, model_path, flags)
    _check_untie(module, model_path, flags)
    out = os.path.abspath(out_dir) if out_dir else os.path.join(workdir, "front")
    count = ["--models", str(models)] if models is not None else []
    res, log = _run_training("front", model_path, workdir, data, val, tasks, terms, criterion, flags,
                             count + ["--out-dir", out], progress, keep_data, names)
    recs = read_log(log)
    ms = res.get("models") or []
    losses = [{k: _finite(v) for k, v in (m.get("losses") or {}).items()} for m in ms]
    nd = _non_dominated(losses)
    fm = [FrontModel(index=int(m.get("model", i)), path=os.path.abspath(m.get("file") or ""), losses=losses[i],
                     g=_finite(m.get("g")), metrics=m.get("metrics") or {}, non_dominated=nd[i],
                     explanation=m.get("explanation") or {}, _module=module)
          for i, m in enumerate(ms)]
    q = res.get("loss_quality") or {}
    return FrontResult(status=res.get("status", ""), steps=int(res.get("steps") or 0), models=fm,
                       hv=_finite(q.get("hv")), log=_records([r for r in recs if r.get("kind") is None and "step" in r]),
                       paths={"model": model_path, "out_dir": out, "report": os.path.join(out, "report.json"),
                              "log": log, "workdir": workdir},
                       raw=res)


@_keywords
def evaluate(model: Model, data: Data, *, tasks: TaskSpecs, inputs: Optional[Sequence[str]] = None,
             outputs: Optional[Sequence[str]] = None, workdir: Optional[PathArg] = None, opset: Optional[int] = None,
             strict: bool = True, keep_data: bool = False, keep_workdir: bool = False,
             names: Optional[Sequence[str]] = None,
             # `paretonav eval`'s flags (_EVAL_FLAGS); None and False leave a flag out: the binary's default.
             map: Optional[Strings] = None, bn: Optional[Literal["frozen", "train"]] = None,
             freeze: Optional[Strings] = None, max_memory: Optional[str] = None, batch: Optional[int] = None,
             limit: Optional[int] = None, grad_out: Optional[PathArg] = None, force: bool = False,
             verbose: bool = False) -> EvalResult:
    """Losses, g(θ) and metrics of ``model`` on ``data`` (``paretonav eval``).
    Arguments as for :func:`tune` (a temporary ``workdir`` is always removed
    unless ``keep_workdir`` or ``keep_data``); the keywords from ``map`` on
    are ``eval``'s flags (``batch``, ``bn``, ``limit``...)."""
    flags = _flags(locals(), _EVAL_FLAGS)
    task_list = as_tasks(tasks)
    work, own = _workdir(workdir)
    d = os.path.join(work, "data")
    try:
        model_path, _ = _prepare(model, data, inputs, outputs, work, opset, strict, names, maps=_maps(flags))
        args = ["eval", model_path] + _source_args("data", work, data, model_path, task_list, flags, names)
        args += _task_args(task_list, []) + ["--json"] + _flag_args(flags)
        res, _ = run_json(args)
    finally:
        if not keep_data:
            shutil.rmtree(d, ignore_errors=True)
        if own and not keep_data and not keep_workdir:
            shutil.rmtree(work, ignore_errors=True)
    return EvalResult(losses={k: _finite(v) for k, v in (res.get("tasks") or {}).items()}, g=_finite(res.get("g")),
                      metrics=res.get("metrics") or {}, examples=int(res.get("examples") or 0), raw=res)


def inspect(model: PathArg) -> JSON:
    """``paretonav inspect MODEL --json`` as a dict: inputs, outputs, opsets,
    ops, trainable initializers, shared initializers, what cannot be trained."""
    path = os.path.abspath(os.fspath(model))
    res, _ = run_json(["inspect", path, "--json"])
    return res
