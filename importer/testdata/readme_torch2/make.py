#!/usr/bin/env python3
"""The README's export snippet ("From the command line"), run under PyTorch 2.x.

Writes, beside this script:

  fixed/model.onnx   the snippet as README.md has it now, run unchanged: it
                     passes dynamo=False where torch.onnx.export has the
                     argument, so BatchNormalization stays and every
                     parameter is an initializer under its state_dict key.
  fused/model.onnx   the same export without dynamo=False, as the snippet
  (+ model.onnx.data) once read: on PyTorch >= 2.9 torch.onnx.export then
                     defaults to dynamo=True with the onnxscript optimizer,
                     which fuses each BatchNorm into the Conv before it
                     (the Conv keeps its weight's and bias's names but holds
                     the fused values; the BatchNorm is gone). At
                     opset_version=17 the exporter works at 18 and converts
                     the file down, which drops the initializers'
                     metadata; only the Conv nodes' metadata
                     (pkg.onnxscript.rewriter.rule_name =
                     FuseBatchNormIntoConv) says what happened.

The snippet's train.npz (1.5 MB) is not kept. Made with torch 2.15.0,
onnxscript 0.7.2, onnx 1.23.2 (the venv of
backend/testdata/torch2/make_torch2_fixtures.py); from the repo root:

    /tmp/venv-torch2/bin/python importer/testdata/readme_torch2/make.py
"""

import os
import re
import shutil
import sys
import tempfile

import torch

here = os.path.dirname(os.path.abspath(__file__))
readme = os.path.join(here, "..", "..", "..", "README.md")
section = open(readme, encoding="utf-8").read().split("### From the command line", 1)[1]
snippet = re.findall(r"```python\n(.*?)```", section, re.S)[0]
old = snippet.replace("do_constant_folding=False,", "do_constant_folding=False)").split("                  **torchscript)")[0]
assert old != snippet and "**torchscript" not in old, "the README's snippet changed: update this script"

for name, code in (("fixed", snippet), ("fused", old)):
    out = os.path.join(here, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            torch.manual_seed(0)
            exec(compile(code, "README.md (%s)" % name, "exec"), {"__name__": "snippet"})
        finally:
            os.chdir(cwd)
        for f in sorted(os.listdir(tmp)):
            if f.startswith("model.onnx"):
                shutil.copy(os.path.join(tmp, f), os.path.join(out, f))
                print("%s/%s" % (name, f), os.path.getsize(os.path.join(out, f)), file=sys.stderr)
print("torch", torch.__version__, file=sys.stderr)
