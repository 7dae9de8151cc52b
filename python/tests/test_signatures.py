"""The public functions' keyword parameters: the binary's flags, typed, each
checked before anything runs; the package's version, written once; the
typing marker the wheel ships."""

import importlib.metadata
import inspect
import os
import pathlib
import re
import subprocess
import sys

import pytest

import paretonav
from paretonav import api
from conftest import repo_file

# Flags of the binary the functions set from their own arguments or leave to
# the CLI, and the keyword parameters of each function that are flags.
_SET_BY_FUNCTION = {"help", "data", "val", "task", "term", "json", "config", "resume", "problem"}
_COMMANDS = [(paretonav.tune, "tune", api._TUNE_FLAGS, {"criterion", "out"}),
             (paretonav.front, "front", api._FRONT_FLAGS, {"criterion", "models", "out_dir"}),
             (paretonav.evaluate, "eval", api._EVAL_FLAGS, set())]


def _help_flags(binary, command):
    """The flags `paretonav COMMAND --help` lists, dashes as underscores."""
    out = subprocess.run([binary, command, "--help"], capture_output=True, text=True, check=True).stdout
    return {m.replace("-", "_") for m in re.findall(r"^\s+--([a-z][a-z-]*)", out, re.M)}


@pytest.mark.parametrize("fn,command,flags,own", _COMMANDS, ids=[c[1] for c in _COMMANDS])
def test_keywords_are_the_binary_flags(binary, fn, command, flags, own):
    """Every flag of the command is a keyword parameter (or set by the
    function), and every flag keyword is one of the command's flags."""
    have = _help_flags(binary, command)
    params = inspect.signature(fn).parameters
    assert set(flags) <= have, "not flags of paretonav %s: %s" % (command, sorted(set(flags) - have))
    missing = have - set(flags) - own - _SET_BY_FUNCTION
    assert not missing, "flags of paretonav %s without a keyword of %s(): %s" % (command, fn.__name__, sorted(missing))
    for name in set(flags) | own:
        p = params.get(name)
        assert p is not None and p.kind is p.KEYWORD_ONLY, "%s(): %s is not a keyword-only parameter" % (fn.__name__, name)
        assert p.annotation is not p.empty, "%s(): %s has no type" % (fn.__name__, name)
        assert p.default in (None, False) or name not in flags, \
            "%s(): flag %s defaults to %r: only the binary defines defaults" % (fn.__name__, name, p.default)
    assert not any(p.kind is p.VAR_KEYWORD for p in params.values()), "%s() still takes **kwargs" % fn.__name__


@pytest.mark.parametrize("call,words", [
    (lambda: paretonav.tune("/nonexistent.onnx", {}, tasks=["a:mse:o:t"], stpes=3), ["'stpes'", "'steps'"]),
    (lambda: paretonav.tune("/nonexistent.onnx", {}, tasks=["a:mse:o:t"], task=["a:mse:o:t"]), ["'task'", "tasks="]),
    (lambda: paretonav.tune("/nonexistent.onnx", {}, tasks=["a:mse:o:t"], resume="x.ckpt"),
     ["'resume'", "paretonav tune --resume"]),
    (lambda: paretonav.front("/nonexistent.onnx", {}, tasks=["a:mse:o:t"], problem="exp2"),
     ["'problem'", "paretonav front --problem"]),
    (lambda: paretonav.evaluate("/nonexistent.onnx", {}, tasks=["a:mse:o:t"], bacth=8), ["'bacth'", "'batch'"]),
    (lambda: paretonav.evaluate("/nonexistent.onnx", {}, tasks=["a:mse:o:t"], zzz=1), ["'zzz'", "paretonav eval"]),
])
def test_unknown_keyword_refused_first(call, words):
    """A keyword that is neither a parameter nor a flag is a TypeError
    naming it (and the nearest names), raised before the missing model is
    even looked at."""
    with pytest.raises(TypeError) as e:
        call()
    for w in words:
        assert w in str(e.value)


def test_flag_values_become_arguments():
    flags = {"val_every": 10, "untie": True, "force": False, "freeze": ["enc.*", "dec.*"], "lr": None,
             "log": pathlib.Path("/tmp/run.jsonl"), "map": "x=img"}
    assert api._flag_args(flags) == ["--val-every", "10", "--untie", "--freeze", "enc.*", "--freeze", "dec.*",
                                     "--log", "/tmp/run.jsonl", "--map", "x=img"]


def test_version_written_once():
    """__version__ is what the wheel builder writes into the wheel, and the
    installed distribution's version when the package is installed."""
    sys.path.insert(0, os.path.dirname(repo_file("python", "wheel_builder.py")))
    try:
        import wheel_builder
    finally:
        sys.path.pop(0)
    assert wheel_builder.project()["version"] == paretonav.__version__
    try:
        installed = importlib.metadata.version("paretonav")
    except importlib.metadata.PackageNotFoundError:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true: paretonav is not installed (.ci/run installs the wheel)")
        pytest.skip("paretonav is not installed")
    assert installed == paretonav.__version__


def test_typed_marker_shipped():
    """py.typed (PEP 561) sits beside the package, in the wheel too: type
    checkers read the package's annotations."""
    assert os.path.isfile(os.path.join(os.path.dirname(paretonav.__file__), "py.typed"))
