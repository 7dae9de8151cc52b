"""Tasks as Python objects, checked with the binary's own rules before anything runs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Union

__all__ = ["Task", "LOSSES", "as_tasks"]

#: The loss kinds the binary knows, with the target each expects.
LOSSES: Dict[str, str] = {
    "nll": "class labels (int64) for log-probabilities [N,C] or [N,C,H,W]",
    "ce": "class labels (int64) for logits [N,C] or [N,C,H,W]",
    "mse": "an array of the output's shape",
    "l1": "an array of the output's shape",
    "depth_l1": "a depth map of the output's shape (0 = no depth)",
    "normal_cos": "unit normals of the output's shape (0 = no normal)",
    "output": "no target: the output already is the scalar loss",
}
_OPTIONS = {"nll": ("ignore_index",), "ce": ("ignore_index",)}
_BAD_NAME = re.compile(r"[\s()+\-*/,:]")


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

    def validate(self) -> None:
        """Raises ValueError naming what is wrong, as the binary would."""
        where = "task %r" % (self.name,)
        if not isinstance(self.name, str) or not self.name or _BAD_NAME.search(self.name):
            raise ValueError("%s: the name must be non-empty and contain no spaces, colons, operators or commas" % where)
        if self.loss not in LOSSES:
            raise ValueError("%s: unknown loss %r (known: %s)" % (where, self.loss, ", ".join(sorted(LOSSES))))
        if not self.output or ":" in str(self.output):
            raise ValueError("%s: output %r must be a non-empty ONNX value name without ':'" % (where, self.output))
        if self.loss == "output":
            if self.target not in (None, "", "-"):
                raise ValueError("%s: loss 'output' takes no target (got %r)" % (where, self.target))
        elif not self.target or ":" in str(self.target):
            raise ValueError("%s: loss %r needs a target array (%s)" % (where, self.loss, LOSSES[self.loss]))
        for k, v in self.options.items():
            if k not in _OPTIONS.get(self.loss, ()):
                raise ValueError("%s: loss %r takes no option %r (accepted: %s)"
                                 % (where, self.loss, k, ", ".join(_OPTIONS.get(self.loss, ())) or "none"))
            if k == "ignore_index" and (isinstance(v, bool) or not isinstance(v, int)):
                raise ValueError("%s: ignore_index must be an integer, got %r" % (where, v))

    @classmethod
    def parse(cls, spec: str) -> "Task":
        """Reads the CLI's ``NAME:LOSS:OUTPUT:TARGET[:key=value,...]``."""
        parts = spec.split(":", 4)
        if len(parts) < 3:
            raise ValueError("task %r: expected NAME:LOSS:OUTPUT:TARGET[:key=value,...]" % spec)
        parts += [""] * (4 - len(parts))
        opts: Dict[str, Any] = {}
        if len(parts) == 5 and parts[4]:
            for kv in parts[4].split(","):
                k, sep, v = kv.partition("=")
                if not sep or not k:
                    raise ValueError("task %r: option %r is not key=value" % (spec, kv))
                if k == "ignore_index":
                    try:
                        opts[k] = int(v)
                    except ValueError:
                        raise ValueError("task %r: ignore_index %r is not an integer" % (spec, v)) from None
                else:
                    opts[k] = v
        target = parts[3] if parts[3] not in ("", "-") else None
        return cls(parts[0], parts[1], parts[2], target, **opts)

    def __str__(self) -> str:
        s = "%s:%s:%s:%s" % (self.name, self.loss, self.output, self.target or "")
        if self.options:
            s += ":" + ",".join("%s=%s" % (k, self.options[k]) for k in sorted(self.options))
        return s

    @property
    def integer_target(self) -> bool:
        """Whether the target holds class labels."""
        return self.loss in ("nll", "ce")


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
            raise ValueError("%s: task name %r used twice" % (what, t.name))
        out.append(t)
    if not out and what == "tasks":
        raise ValueError("tasks: at least one task NAME:LOSS:OUTPUT:TARGET is required")
    return out
