"""Tasks as Python objects, checked with the binary's own rules before anything runs."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

__all__ = ["Task", "LOSSES", "as_tasks", "check_criterion"]



@functools.lru_cache(maxsize=None)
def _kinds() -> Dict[str, Dict[str, Any]]:
    """The binary's loss kinds by name (``paretonav losses --json``): its
    registry is the one description of each kind, read once a process."""
    from ._run import run_json

    answer, _ = run_json(["losses", "--json"])
    return {k["name"]: k for k in answer["losses"]}


class _Losses(Mapping[str, str]):
    """The loss kinds the binary knows, each with what its target array
    holds, read from the binary on first use."""

    def __getitem__(self, name: str) -> str:
        return str(_kinds()[name]["target"])

    def __iter__(self) -> Iterator[str]:
        return iter(_kinds())

    def __len__(self) -> int:
        return len(_kinds())

    def __repr__(self) -> str:
        return repr(dict(self))


#: The loss kinds the binary knows, with the target each expects
#: (``paretonav losses`` lists them with their options and metrics).
LOSSES: Mapping[str, str] = _Losses()


def _option_keys(loss: str) -> List[str]:
    """The options loss kind ``loss`` accepts (all integers)."""
    kind = _kinds().get(loss)
    return [o["key"] for o in kind["options"]] if kind else []


_BAD_NAME = re.compile(r"[\s()+\-*/,:]")


def _q(s: Any) -> str:
    """s quoted as the binary quotes it (Go's %q)."""
    return json.dumps(str(s))


@dataclass
class Task:
    """One task: ``Task("seg", "nll", output="seg_logp", target="seg", ignore_index=-1)``.

    ``name`` is what the criterion calls it, ``loss`` a kind of :data:`LOSSES`,
    ``output`` the model output (ONNX value) it reads, ``target`` the data
    array holding its target (none for ``loss="output"``); further keywords
    are the loss's options (``ignore_index`` for ``nll`` and ``ce``).
    ``str(task)`` is the CLI's ``NAME:LOSS:OUTPUT:TARGET[:key=value]``.
    """

    name: str
    loss: str
    output: str
    target: Optional[str] = None
    options: Dict[str, Any] = field(default_factory=dict)

    def __init__(self, name: str, loss: str, output: str, target: Optional[str] = None, **options: Any) -> None:
        self.name, self.loss, self.output, self.target = name, loss, output, target
        self.options = dict(options)
        self.validate()

    def _where(self) -> str:
        # Errors quote the spec as the user wrote it, like the binary does.
        return "task %s" % _q(self.__dict__.get("_spec") or self)

    def validate(self) -> None:
        """Raises ValueError naming what is wrong, in the binary's words."""
        where = self._where()
        if not isinstance(self.name, str) or not self.name or _BAD_NAME.search(self.name):
            raise ValueError("%s: name %s must be non-empty and contain no spaces, operators or commas"
                             % (where, _q(self.name)))
        if self.loss not in _kinds():
            raise ValueError("%s: unknown loss %s (known: %s)" % (where, _q(self.loss), ", ".join(sorted(_kinds()))))
        if not self.output or ":" in str(self.output):
            raise ValueError("%s: the ONNX output is missing" % where if not self.output else
                             "%s: output %s may not contain ':'" % (where, _q(self.output)))
        if not _kinds()[self.loss]["needs_target"]:
            if self.target not in (None, "", "-"):
                raise ValueError("%s: loss %s takes no target (got %s)" % (where, _q(self.loss), _q(self.target)))
        elif not self.target:
            raise ValueError("%s: loss %s needs a target array" % (where, _q(self.loss)))
        elif ":" in str(self.target):
            raise ValueError("%s: target %s may not contain ':'" % (where, _q(self.target)))
        accepted = _option_keys(self.loss)
        for k, v in self.options.items():
            if k not in accepted:
                raise ValueError("%s: loss %s takes no option %s (accepted: [%s])"
                                 % (where, _q(self.loss), _q(k), " ".join(accepted)))
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError("%s: %s %s is not an integer" % (where, k, _q(v)))

    @classmethod
    def parse(cls, spec: str) -> "Task":
        """Reads the CLI's ``NAME:LOSS:OUTPUT:TARGET[:key=value,...]``."""
        parts = spec.split(":", 4)
        if len(parts) < 3:
            raise ValueError("task %s: expected NAME:LOSS:OUTPUT:TARGET[:key=value,...]" % _q(spec))
        parts += [""] * (4 - len(parts))
        opts: Dict[str, Any] = {}
        if len(parts) == 5 and parts[4]:
            for kv in parts[4].split(","):
                k, sep, v = kv.partition("=")
                if not sep or not k:
                    raise ValueError("task %s: option %s is not key=value" % (_q(spec), _q(kv)))
                if k in _option_keys(parts[1]):
                    try:
                        opts[k] = int(v)
                    except ValueError:
                        raise ValueError("task %s: %s %s is not an integer" % (_q(spec), k, _q(v))) from None
                else:
                    opts[k] = v
        target = parts[3] if parts[3] not in ("", "-") else None
        t = cls.__new__(cls)
        t.name, t.loss, t.output, t.target, t.options = parts[0], parts[1], parts[2], target, opts
        t.__dict__["_spec"] = spec
        t.validate()
        del t.__dict__["_spec"]
        return t

    def __str__(self) -> str:
        s = "%s:%s:%s:%s" % (self.name, self.loss, self.output, self.target or "")
        if self.options:
            s += ":" + ",".join("%s=%s" % (k, self.options[k]) for k in sorted(self.options))
        return s

    @property
    def integer_target(self) -> bool:
        """Whether the target holds class labels."""
        return bool(_kinds()[self.loss]["integer_target"])


def as_tasks(tasks: Union[str, Task, Iterable[Union[str, Task]]], what: str = "tasks") -> List[Task]:
    """Tasks from strings or Task objects; names unique."""
    if isinstance(tasks, (str, Task)):
        tasks = [tasks]
    out: List[Task] = []
    for t in tasks:
        if isinstance(t, str):
            t = Task.parse(t)
        elif isinstance(t, Task):
            t.validate()
        else:
            raise TypeError("%s: expected task strings or Task objects, got %s" % (what, type(t).__name__))
        if any(o.name == t.name for o in out):
            raise ValueError("%s: task name %s used twice" % (what, _q(t.name)))
        out.append(t)
    if not out and what == "tasks":
        raise ValueError("tasks: at least one task NAME:LOSS:OUTPUT:TARGET is required")
    return out


_FUNCS = {"log", "exp", "sqrt", "abs", "pow", "sin", "cos", "tanh", "min", "max"}
_TOKEN = re.compile(r"(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<other>\S)")


def check_criterion(criterion: str, tasks: Sequence[Task], terms: Sequence[Task] = ()) -> None:
    """Raises ValueError, in the binary's words, for a name in a free
    expression that is neither a task, a term, ``drift`` nor a function.
    Presets (``wd:...``, ``energy``) and the syntax are left to the binary."""
    if not isinstance(criterion, str):
        raise TypeError("criterion: expected an expression string, got %s" % type(criterion).__name__)
    if ":" in criterion or re.search(r"\benergy\b", criterion):
        return
    known = [t.name for t in tasks]
    names = set(known) | {t.name for t in terms} | {"drift"} | _FUNCS
    for m in _TOKEN.finditer(criterion):
        if m.group("name") and m.group("name") not in names:
            msg = "criterion: column %d: unknown task %s; known tasks: %s" % (m.start() + 1, _q(m.group("name")), ", ".join(known))
            if terms:
                msg += "; terms: " + ", ".join(t.name for t in terms)
            raise ValueError(msg)
