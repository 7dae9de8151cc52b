"""The PyTorch that paretonav's speed and memory are compared with: PyPI's
torch 2.x on the CPU (MKL, oneDNN), in a venv the bench scripts make
themselves, with every version pinned and printed beside each table.

    python3 bench/torchenv.py            # makes the venv if needed, prints its build as JSON

The venv is `.tools/bench-torch2` under the repository root (beside
ONNX Runtime's `.tools/ort`); `python()` returns its interpreter, making it
on first use with Debian's python3-venv and pip from PyPI (PyPI's torch
for x86_64 Linux is the CUDA build, about 4 GB; it runs on the CPU).
A bench script's `--python PY` runs the twins under another interpreter
instead (`/usr/bin/python3` for Debian's torch 1.13, whose reference BLAS
makes it no anchor; its tables then say so). `describe(py)` is what
every table prints: torch's version, its BLAS, MKL and oneDNN versions,
the CPU kernels it chose and the thread count.
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
VENV = os.path.join(REPO, ".tools", "bench-torch2")
# The versions of backend/testdata/torch2/make_torch2_fixtures.py's venv,
# and TorchJD (torch_mtan.py --torchjd) with the QP solver its UPGrad
# needs (its extra quadprog-projector), and timm, the zoo's architectures
# (step_models.ZOO, bench/torch2_zoo/check.py).
PINS = ["torch==2.15.0", "torchvision==0.29.2", "timm==1.0.31", "numpy==2.4.6", "onnx==1.23.2",
        "onnxscript==0.7.2", "torchjd==0.18.0", "qpsolvers==4.13.0", "quadprog==0.1.14", "scipy==1.17.1"]


def _pinned(py):
    """Whether py has every pinned version (a local suffix such as +cu132
    aside); a missing or different package is False."""
    code = ("import importlib.metadata as m, sys\n"
            "for p in sys.argv[1:]:\n"
            "    n, v = p.split('==')\n"
            "    try:\n"
            "        have = m.version(n)\n"
            "    except m.PackageNotFoundError:\n"
            "        sys.exit(1)\n"
            "    if have.split('+')[0] != v:\n"
            "        sys.exit(1)\n")
    return subprocess.run([py, "-c", code] + PINS, capture_output=True).returncode == 0


def python(override=None):
    """The interpreter the PyTorch twins run under: override when given,
    else the bench venv's, made first (or brought to the pins, when one
    differs or is missing)."""
    if override:
        return override
    py = os.path.join(VENV, "bin", "python")
    if os.path.exists(py) and _pinned(py):
        return py
    print("torchenv: installing %s from PyPI into %s (several GB, a few minutes)" % (" ".join(PINS), VENV),
          file=sys.stderr)
    if not os.path.exists(py):
        subprocess.run(["/usr/bin/python3", "-m", "venv", VENV], check=True)
    # An existing venv keeps what already matches a pin (pip skips it):
    # a pin added later costs its own download, not torch's again.
    subprocess.run([py, "-m", "pip", "install", "--quiet"] + PINS, check=True)
    if not _pinned(py):
        sys.exit("torchenv: %s does not hold %s after installing them" % (VENV, " ".join(PINS)))
    return py


_DESCRIBE = r"""
import json, re, torch
c = torch.__config__.show()
def find(p):
    m = re.search(p, c)
    return m.group(1) if m else None
cap = torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else find(r"CPU capability usage: (\S+)")
print(json.dumps({"torch": torch.__version__, "blas": find(r"BLAS_INFO=([^,\s]+)"),
                  "mkl": find(r"Math Kernel Library Version ([0-9.]+)"), "onednn": find(r"MKL-DNN v(\S+)"),
                  "cpu_capability": cap, "threads_default": torch.get_num_threads()}))
"""


def describe(py):
    """torch's build under py: version, BLAS, MKL, oneDNN, CPU kernels."""
    p = subprocess.run([py, "-c", _DESCRIBE], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("torchenv: %s cannot import torch:\n%s" % (py, p.stderr.strip()))
    return json.loads(p.stdout)


def label(d):
    """One line for a table: 'PyTorch 2.15.0 (PyPI; BLAS mkl, MKL 2024.2, oneDNN 3.13.3, AVX512)'."""
    parts = ["BLAS %s" % d.get("blas")]
    if d.get("mkl"):
        parts.append("MKL %s" % d["mkl"])
    if d.get("onednn"):
        parts.append("oneDNN %s" % d["onednn"])
    if d.get("cpu_capability"):
        parts.append(str(d["cpu_capability"]))
    note = "" if d.get("blas") != "generic" else "; the reference BLAS, no anchor"
    return "PyTorch %s (%s%s)" % (d.get("torch"), ", ".join(parts), note)


if __name__ == "__main__":
    py = python(sys.argv[1] if len(sys.argv) > 1 else None)
    d = describe(py)
    d["python"] = py
    print(json.dumps(d, indent=1))
    print(label(d), file=sys.stderr)
