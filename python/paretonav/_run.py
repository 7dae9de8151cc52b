"""Runs the bundled binary: progress from its JSON-lines log, errors as exceptions, Ctrl-C as a clean stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._binary import binary
from .errors import CLIError

__all__ = ["ParetonavWarning", "run_json", "read_log"]


class ParetonavWarning(UserWarning):
    """A warning the binary printed (``warning: ...``)."""


def _message(stderr: str) -> str:
    """The binary's error message: its ``paretonav: ...`` line(s), else its last line."""
    lines = [l.rstrip() for l in stderr.splitlines() if l.strip()]
    errs = [l[len("paretonav: "):] for l in lines if l.startswith("paretonav: ")]
    if errs:
        return "\n".join(errs)
    return lines[-1] if lines else "paretonav failed without a message"


class _Bar:
    """A one-line progress bar on stderr (a terminal or a notebook), or a
    plain line every tenth of the run elsewhere."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label, self.enabled = label, enabled
        self.total: Optional[int] = None
        self.start_step = 0
        self.t0 = time.monotonic()
        self.inline = enabled and (sys.stderr.isatty() or "ipykernel" in sys.modules)
        self.last_tenth = -1
        self.drawn = False

    def config(self, rec: Dict[str, Any]) -> None:
        self.total = rec.get("steps") or None
        self.start_step = rec.get("start_step") or 0
        self.t0 = time.monotonic()

    def step(self, rec: Dict[str, Any]) -> None:
        if not self.enabled or not isinstance(rec.get("step"), int):
            return
        s, n = rec["step"], self.total
        f, g = rec.get("F"), rec.get("g")
        tail = "".join(" %s=%.4g" % (k, v) for k, v in (("F", f), ("g", g)) if isinstance(v, (int, float)))
        if n:
            done = (s - self.start_step) / max(1, n - self.start_step)
            el = time.monotonic() - self.t0
            eta = el / done * (1 - done) if done > 0 else 0
            width = 24
            bar = "#" * int(width * s / n) + "-" * (width - int(width * s / n))
            text = "%s %d/%d [%s] ETA %.0fs%s" % (self.label, s, n, bar, eta, tail)
            tenth = int(10 * s / n)
        else:
            text, tenth = "%s step %d%s" % (self.label, s, tail), s // 100
        if self.inline:
            sys.stderr.write("\r" + text[:120].ljust(80))
            sys.stderr.flush()
            self.drawn = True
        elif tenth != self.last_tenth:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        self.last_tenth = tenth

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.drawn = False


class _Tail:
    """Reads the complete lines appended to a file since the last call."""

    def __init__(self, path: Optional[str]) -> None:
        self.path, self.pos, self.buf = path, 0, b""

    def lines(self) -> List[Dict[str, Any]]:
        if not self.path or not os.path.exists(self.path):
            return []
        with open(self.path, "rb") as f:
            f.seek(self.pos)
            chunk = f.read()
        self.pos += len(chunk)
        self.buf += chunk
        *done, self.buf = self.buf.split(b"\n")
        out = []
        for line in done:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out


def read_log(path: str) -> List[Dict[str, Any]]:
    """The records of a JSON-lines log."""
    return _Tail(path).lines()


def _emit_warnings(stderr: str) -> None:
    """A ParetonavWarning per ``warning: ...`` line, with the indented lines
    that continue it (the names it lists)."""
    found: List[str] = []
    open_ = False  # the last line was part of a warning
    for line in stderr.splitlines():
        if line.startswith("warning: "):
            found.append(line[len("warning: "):])
            open_ = True
        elif open_ and line.startswith("  "):
            found[-1] += "\n" + line
        else:
            open_ = False
    for w in found:
        warnings.warn(w, ParetonavWarning, stacklevel=4)


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Optional[Any]:
    """A preexec_fn making the child get SIGTERM when this process dies
    (Linux's PR_SET_PDEATHSIG), or None where there is no prctl: a Python
    killed outright (kill -9, the OOM killer) then stops the binary, which
    checkpoints and exits without writing its output, instead of running on
    unseen. The signal comes when the forking thread ends; run_json's
    caller waits in that thread for the child, so it cannot end first."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError, ImportError):
        return None
    parent = os.getpid()
    args = (ctypes.c_ulong(_PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGTERM), ctypes.c_ulong(0),
            ctypes.c_ulong(0), ctypes.c_ulong(0))

    def preexec() -> None:
        prctl(*args)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def run_json(args: Sequence[str], log: Optional[str] = None, progress: bool = False, label: str = "") -> Tuple[Any, str]:
    """Runs ``paretonav ARGS... --json``; returns (its JSON answer, its stderr).

    While it runs, the records appended to ``log`` drive a progress bar. A
    failure raises :class:`CLIError` with the binary's message and exit
    status. Ctrl-C (KeyboardInterrupt) sends the binary one SIGINT (it stops
    after the current step and writes its checkpoint), waits for it, and
    raises KeyboardInterrupt with what it printed; a second Ctrl-C while
    waiting kills it."""
    argv = [binary()] + list(args)
    bar = _Bar(label or (args[0] if args else "paretonav"), progress)
    tail = _Tail(log)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # Its own session: a terminal's Ctrl-C reaches Python only, which
        # passes exactly one SIGINT on (a notebook's interrupt does the same).
        # And it dies with this process (see _die_with_parent).
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_die_with_parent())
        interrupted = False
        try:
            while True:
                try:
                    rc = proc.wait(timeout=0.1)
                except subprocess.TimeoutExpired:
                    rc = None
                for rec in tail.lines():
                    if rec.get("kind") == "config":
                        bar.config(rec)
                    else:
                        bar.step(rec)
                if rc is not None:
                    break
        except KeyboardInterrupt:
            interrupted = True
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait()
            except KeyboardInterrupt:
                proc.kill()
                proc.wait()
        finally:
            bar.close()
            if proc.poll() is None:  # an exception other than Ctrl-C: leave nothing running
                proc.kill()
                proc.wait()
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
        out.seek(0)
        stdout = out.read().decode("utf-8", "replace")
    if interrupted:
        lines = [l for l in stderr.splitlines() if l.startswith("interrupted") or l.startswith("paretonav: ")]
        raise KeyboardInterrupt("; ".join(lines) or "paretonav stopped (exit status %d)" % proc.returncode)
    if proc.returncode != 0:
        raise CLIError(_message(stderr), proc.returncode, argv, stderr)
    _emit_warnings(stderr)
    try:
        return json.loads(stdout), stderr
    except ValueError:
        raise CLIError("paretonav printed no JSON answer: %r" % stdout[-500:], proc.returncode, argv, stderr) from None
